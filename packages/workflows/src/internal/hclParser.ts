/**
 * hclParser — HashiCorp's HCL parser, a Go program compiled to WebAssembly (`@cdktn/hcl2json`'s
 * `main.wasm.gz` and Go's `wasm_exec.js` glue), started on the first call and kept for the
 * process. The package's own bridge starts it when the package is imported, whatever the program
 * then does, reads the file through `fs-extra` (some 30 modules) and gunzips it on the main
 * thread; here nothing happens until a workflow is parsed, the file is read and gunzipped on
 * libuv's threads, and a call waits for the program instead of polling for it.
 *
 * Go's program registers its functions on `globalThis.__parse_terraform_config_wasm__` while it
 * starts (synchronously, inside `go.run`); each takes its arguments and a Node-style callback. A
 * compiled module cannot be kept across processes on Node 22 (`v8.serialize` of a
 * `WebAssembly.Module` writes nothing it can read back), so each process compiles it again;
 * V8 compiles its functions lazily, on their first call (ADR 0096).
 */
import * as fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as zlib from "node:zlib"
import { promisify } from "node:util"

/** The names the Go program registers: `parse(filename, source)`, `getExpressionAst(filename, expression)`. */
type Name = "parse" | "getExpressionAst"
type Callback = (error: unknown, result?: unknown) => void
type Functions = Partial<Record<Name, (...args: Array<unknown>) => unknown>>

interface GoRuntime {
  readonly importObject: WebAssembly.Imports
  run(instance: WebAssembly.Instance): Promise<void>
}

const require = createRequire(import.meta.url)
const gunzip = promisify(zlib.gunzip)

/** The global the Go program's `main` registers its functions on. */
const GLOBAL = "__parse_terraform_config_wasm__"

const start = async (): Promise<Functions> => {
  const bytes = await gunzip(await fs.readFile(require.resolve("@cdktn/hcl2json/main.wasm.gz")))
  // Go's glue (it sets `globalThis.Go`, and the `fs`, `require`… globals the program uses).
  require("@cdktn/hcl2json/wasm/bridge_wasm_exec.js")
  const Go = (globalThis as unknown as { readonly Go: new() => GoRuntime }).Go
  const go = new Go()
  const { instance } = await WebAssembly.instantiate(bytes, go.importObject)
  const functions: Functions = {}
  const global = globalThis as unknown as Record<string, unknown>
  // `main` registers on whatever the global holds while it runs, which is synchronous up to its
  // first wait: another copy of the parser (the package's own bridge) keeps its own object.
  global[GLOBAL] = functions
  void go.run(instance)
  return functions
}

let started: Promise<Functions> | undefined

/** The result text of the Go function `name`, or its error (an `Error` with the parser's message). */
export const call = async (name: Name, ...args: ReadonlyArray<string>): Promise<string> => {
  started ??= start()
  const functions = await started
  const fn = functions[name]
  if (fn === undefined) throw new Error(`the HCL parser has no function ${name}`)
  return new Promise<string>((resolve, reject) => {
    const callback: Callback = (error, result) => (error ? reject(new Error(String(error))) : resolve(String(result)))
    try {
      fn(...args, callback)
    } catch (error) {
      reject(error)
    }
  })
}
