/**
 * Test helpers for the built-in tools: a real LocalSandbox on a fresh temporary directory (removed
 * when the test's scope closes), the call context a session would pass, and a way to run a tool
 * the way the Executor does (decode the model's input, then call).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Context, Effect, Layer, type Redacted } from "effect"
import * as Sandbox from "../../src/Sandbox.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import type * as Tool from "../../src/Tool.ts"

/** The context a session would give a tool call. */
export const makeContext = (
  sandbox: Sandbox.Service,
  secrets: Readonly<Record<string, Redacted.Redacted<string>>> = {}
): Tool.Context => ({
  sessionId: "test",
  agent: "test",
  sandbox,
  cwd: sandbox.cwd,
  secrets,
  assigns: {},
  callId: "call_1"
})

/** A temporary directory holding `files` (relative path → content), deleted with the scope. */
export const tempDir = (files: Readonly<Record<string, string | Uint8Array>> = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), "condukt-tools-"))
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true })
        writeFileSync(join(dir, path), content)
      }
      return dir
    }),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** A LocalSandbox on a fresh temporary directory holding `files`, and a context that holds it. */
export const localContext = (
  files: Readonly<Record<string, string | Uint8Array>> = {},
  options: {
    /** Allow only the temporary directory itself (`allowedPaths: [dir]`). */
    readonly confined?: boolean
    readonly secrets?: Readonly<Record<string, Redacted.Redacted<string>>>
  } = {}
) =>
  Effect.gen(function*() {
    const dir = yield* tempDir(files)
    const services = yield* Layer.build(
      LocalSandbox.layer(options.confined === true ? { cwd: dir, allowedPaths: [dir] } : { cwd: dir })
    )
    return { dir, context: makeContext(Context.get(services, Sandbox.Sandbox), options.secrets) }
  })

/** Decodes the model's input and calls the tool, as the Executor does. */
export const run = <R>(tool: Tool.Tool<R>, input: unknown, context: Tool.Context) =>
  Effect.flatMap(tool.decode(input), (args) => tool.call(args, context))

/** The message of the failure the call ends with (the text the model reads after `Error: `). */
export const failure = <R>(tool: Tool.Tool<R>, input: unknown, context: Tool.Context) =>
  Effect.map(Effect.flip(run(tool, input, context)), (error) => (typeof error === "string" ? error : error.message))
