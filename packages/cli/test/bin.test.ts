/**
 * The `condukt` executable failing as a user would see it: on a Node.js too old for the packages
 * (the system Node 20, against the built bin a package installs), and on an internal error it did
 * not expect (forced by a preload that breaks `console.log`, so printing the output throws).
 * Either way one clear line on stderr and a non-zero exit, never a silent one. And what it loads:
 * `version`, `--help` and a usage error answer from the command tree alone.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { exec, execIn, root } from "../../../test/support/exec.ts"
import { tempFiles } from "../../providers/test/loopback.ts"

const node22 = path.join(root, "node_modules/node/bin/node")
const bin = path.join(root, "packages/cli/src/bin.ts")
const env = { PATH: `${path.join(root, "node_modules/.bin")}:/usr/bin:/bin`, HOME: os.tmpdir() }

/** The system Node: 20 on this machine and on the Debian CI images, older than the packages need. */
const SYSTEM_NODE = "/usr/bin/node"

/** A module run before the CLI (`--import`): every `console.log` throws `message`. */
const breakingStdout = (message: string) =>
  `--import=data:text/javascript,${encodeURIComponent(`console.log = () => { throw new Error(${message}) }`)}`

/**
 * A module run before the CLI (`--import`) that writes to loaded.json beside it, as the process
 * exits, the packages whose modules were loaded (a workspace package under its `@condukt/` name),
 * and `effect (index)` when `effect`'s or `effect/cli`'s index was (which loads all of its modules).
 */
const recordPackages = `
import { registerHooks } from "node:module"
import { writeFileSync } from "node:fs"
const loaded = new Set()
registerHooks({ load(url, context, next) { loaded.add(url); return next(url, context) } })
const packageOf = (url) => {
  if (/\\/node_modules\\/effect\\/dist\\/(cli\\/)?index\\.js$/.test(url)) return "effect (index)"
  const inModules = url.match(/.*\\/node_modules\\/((@[^/]+\\/)?[^/]+)\\//)
  if (inModules !== null) return inModules[1]
  const inWorkspace = url.match(/\\/packages\\/([^/]+)\\/(src|dist)\\//)
  return inWorkspace === null ? undefined : "@condukt/" + inWorkspace[1]
}
process.on("exit", () =>
  writeFileSync(new URL("loaded.json", import.meta.url), JSON.stringify([...new Set([...loaded].map(packageOf).filter((name) => name !== undefined))].sort()))
)
`

describe("the condukt executable", () => {
  it.live("on the system Node 20, the built bin refuses in one sentence and exits 1, whatever the command", () =>
    Effect.gen(function*() {
      assert.isTrue(fs.existsSync(SYSTEM_NODE), `this test needs an old Node at ${SYSTEM_NODE} (the system Node 20 of Debian and its CI images)`)
      const version = (yield* execIn(os.tmpdir(), SYSTEM_NODE, ["-p", "process.versions.node"], env)).stdout.trim()
      assert.isTrue(Number(version.split(".")[0]) < 22, `${SYSTEM_NODE} is Node ${version}, not an unsupported one`)
      // The bin a package installs (publishConfig.bin): dist/bin.js, built as `prepack` builds it.
      const built = yield* exec(path.join(root, "node_modules/.bin/tsc"), ["-b", "packages/cli/tsconfig.build.json"])
      assert.deepStrictEqual(built, { output: "", exitCode: 0 })
      const dist = path.join(root, "packages/cli/dist/bin.js")
      const refusal = { stdout: "", stderr: `Condukt needs Node.js 22.19 or newer; this is Node.js ${version}.\n`, exitCode: 1 }
      assert.deepStrictEqual(yield* execIn(os.tmpdir(), SYSTEM_NODE, [dist, "version"], env), refusal)
      assert.deepStrictEqual(yield* execIn(os.tmpdir(), SYSTEM_NODE, [dist, "run", "any.hcl"], env), refusal)
    }), { timeout: 120_000 })

  it.live("an unexpected error prints its message and exits 1; --verbose adds the stack", () =>
    Effect.gen(function*() {
      const broken = breakingStdout(`"stdout is broken (forced by the test)"`)
      assert.deepStrictEqual(yield* execIn(os.tmpdir(), node22, [broken, bin, "version"], env), {
        stdout: "",
        stderr: "Unexpected error: stdout is broken (forced by the test) (run again with --verbose for its cause and stack)\n",
        exitCode: 1
      })
      const verbose = yield* execIn(os.tmpdir(), node22, [broken, bin, "version", "--verbose"], env)
      assert.deepStrictEqual({ stdout: verbose.stdout, exitCode: verbose.exitCode }, { stdout: "", exitCode: 1 })
      const [first, second, ...stack] = verbose.stderr.trimEnd().split("\n")
      assert.deepStrictEqual([first, second], ["Unexpected error: stdout is broken (forced by the test)", "Error: stdout is broken (forced by the test)"])
      // The frames are this machine's paths and line numbers: each is an `at` line, the preload's first.
      assert.isAbove(stack.length, 0)
      for (const frame of stack) assert.match(frame!, /^ {4}at /)
      assert.match(stack[0]!, /^ {4}at console\.log \(data:text\/javascript,/)
    }))

  it.live("an unexpected error once a workflow is loaded is redacted with the workflow's secrets", () =>
    Effect.gen(function*() {
      const hook = `workflow "hook" {\n  http "call" {\n    method = "GET"\n    url = "http://127.0.0.1:9/hook"\n    headers = { authorization = "Bearer lit-unexpected-5d1e7a" }\n  }\n}\n`
      const dir = yield* tempFiles({ "hook.hcl": hook })
      // `check` prints `ok: …` on stdout last: that print throws, quoting the workflow's credential.
      const broken = breakingStdout(`"stdout is broken, holding Bearer lit-unexpected-5d1e7a"`)
      assert.deepStrictEqual(yield* execIn(dir, node22, [broken, bin, "check", "hook.hcl"], env), {
        stdout: "",
        stderr: "Unexpected error: stdout is broken, holding [REDACTED:HTTP_CALL_AUTHORIZATION] (run again with --verbose for its cause and stack)\n",
        exitCode: 1
      })
    }).pipe(Effect.scoped))

  it.live("version, --help and a usage error load the command tree alone: no workflow executor, provider, MCP, store, nor effect's index", () =>
    Effect.gen(function*() {
      const dir = yield* tempFiles({ "record.mjs": recordPackages })
      const loadedBy = (args: ReadonlyArray<string>) =>
        Effect.map(execIn(dir, node22, [`--import=${path.join(dir, "record.mjs")}`, bin, ...args], env), ({ exitCode }) => ({
          exitCode,
          packages: JSON.parse(fs.readFileSync(path.join(dir, "loaded.json"), "utf8")) as ReadonlyArray<string>
        }))
      const tree = ["@condukt/cli", "@effect/platform-node-shared", "effect"]
      assert.deepStrictEqual(yield* loadedBy(["version"]), { exitCode: 0, packages: tree })
      assert.deepStrictEqual(yield* loadedBy(["--help"]), { exitCode: 0, packages: tree })
      assert.deepStrictEqual(yield* loadedBy(["run"]), { exitCode: 2, packages: tree })
      // `check` loads the workflow package (and what it needs) when it starts.
      assert.include((yield* loadedBy(["check", "missing.hcl"])).packages, "@condukt/workflows")
    }).pipe(Effect.scoped))

  it.live("check loads the workflow engine, the providers and the HCL parser, not MCP's SDK, undici, the virtual sandbox nor fs-extra", () =>
    Effect.gen(function*() {
      const source = fs.readFileSync(path.join(root, "examples/workflows/word-counts.hcl"), "utf8")
      const dir = yield* tempFiles({ "record.mjs": recordPackages, "word-counts.hcl": source })
      const checked = yield* execIn(dir, node22, [`--import=${path.join(dir, "record.mjs")}`, bin, "check", "word-counts.hcl"], env)
      assert.deepStrictEqual(
        { ...checked, packages: JSON.parse(fs.readFileSync(path.join(dir, "loaded.json"), "utf8")) },
        {
          stdout: "ok: word-counts.hcl\n",
          stderr: "",
          exitCode: 0,
          packages: [
            "@cdktn/hcl2json",
            "@condukt/cli",
            "@condukt/core",
            "@condukt/mcp",
            "@condukt/node",
            "@condukt/providers",
            "@condukt/workflows",
            "@effect/platform-node-shared",
            "effect",
            "effect (index)",
            "re2js"
          ]
        }
      )
    }).pipe(Effect.scoped))
})
