/**
 * Command against real host processes, called as the Executor calls it (decode, then call), with
 * a sandbox that refuses everything: Command must never need it. Then inside a running session on
 * a LocalSandbox, as an agent meets it: where it runs (the sandbox's working directory, as the
 * originals run it) and what the model, the events and the history get of the tool's `env` (its
 * values are secrets: their names only).
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdirSync, realpathSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { ScriptedProcesses, TempDir, TestModel } from "@condukt/testing"
import { Duration, Effect, Layer, Redacted, Stream } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import * as ProcessRunner from "@condukt/core/ProcessRunner"
import * as Redactor from "@condukt/core/Redactor"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Session from "@condukt/core/Session"
import * as Tool from "@condukt/core/Tool"
import { Command } from "@condukt/core/tools/Command"
import * as Condukt from "../../../src/Condukt.ts"
import * as ProcessGroup from "../../../src/internal/processGroup.ts"
import * as LocalSandbox from "../../../src/sandbox/Local.ts"

const refuse = (operation: string) => () =>
  Effect.fail(new Sandbox.SandboxError({ method: operation, reason: new Sandbox.NotSupported({ operation }) }))

const context = (cwd: string, secrets: Tool.Context["secrets"] = {}): Tool.Context => ({
  sessionId: "test",
  agent: "test",
  sandbox: Sandbox.make({ cwd, readStream: () => Stream.unwrap(refuse("readStream")()), writeFile: refuse("writeFile"), exec: refuse("exec") }),
  cwd,
  secrets,
  redact: Redactor.secrets(secrets).redact,
  assigns: {},
  callId: "call_1",
  approve: Tool.cannotAsk("Command")
})

const tempDir = TempDir.make("condukt-command-")

// Condukt.layer gives Command what a program gives it: Node's filesystem and paths, a process budget.
const call = (tool: ReturnType<typeof Command>, input: unknown, ctx: Tool.Context) =>
  Effect.flatMap(tool.decode(input), (args) => tool.call(args, ctx)).pipe(Effect.provide(Condukt.layer))

const failure = (tool: ReturnType<typeof Command>, input: unknown, ctx: Tool.Context) =>
  Effect.map(Effect.flip(call(tool, input, ctx)), (error) => (typeof error === "string" ? error : error.message))

describe("Command", () => {
  it.live("passes shell syntax in arguments through literally", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const text = yield* call(Command({ cwd: dir, command: "printf" }), { args: ["%s\n", "a;b", "$(whoami)", "`id`", "*", "x | y"] }, context(dir))
      assert.strictEqual(text, "a;b\n$(whoami)\n`id`\n*\nx | y\n")
    }))

  it.live("runs with the host allow-list, the tool's env and the session's secrets, and nothing else", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const tool = Command({ cwd: dir, command: "env", env: { TOOL_VAR: "from tool", SHARED: "from tool" } })
      const text = yield* call(tool, {}, context(dir, { API_TOKEN: Redacted.make("s3cret"), SHARED: Redacted.make("from secret") }))
      // The tool's env and the secrets reach the process; what it prints of them reaches the model redacted.
      const expected = { ...ProcessGroup.baseEnv(), TOOL_VAR: "[REDACTED:TOOL_VAR]", SHARED: "[REDACTED:SHARED]", API_TOKEN: "[REDACTED:API_TOKEN]" }
      assert.deepStrictEqual(
        String(text).split("\n").filter((line) => line !== "").sort(),
        Object.entries(expected).map(([name, value]) => `${name}=${value}`).sort()
      )
    }))

  it.live("lets a secret override the tool's env of the same name", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const tool = Command({ cwd: dir, command: "printenv", env: { TOKEN: "from tool" } })
      assert.strictEqual(yield* call(tool, { args: ["TOKEN"] }, context(dir, { TOKEN: Redacted.make("from secret") })), "[REDACTED:TOKEN]\n")
    }))

  it.live("runs in its own host cwd, or a model cwd inside it, never the sandbox's", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      mkdirSync(join(dir, "sub"))
      const tool = Command({ cwd: dir, command: "pwd" })
      // The context's cwd is the sandbox's (a virtual path on a VirtualSandbox): Command ignores it.
      assert.strictEqual(yield* call(tool, { args: ["-P"] }, context("/home/user")), `${dir}\n`)
      assert.strictEqual(yield* call(tool, { args: ["-P"], cwd: "sub" }, context("/home/user")), `${dir}/sub\n`)
      assert.strictEqual(yield* call(tool, { args: ["-P"], cwd: join(dir, "sub") }, context("/")), `${dir}/sub\n`)
      assert.strictEqual(yield* call(tool, { args: ["-P"], cwd: "sub/.." }, context("/")), `${dir}\n`)
    }))

  it.live("defaults its cwd to the sandbox's; to the process's where the sandbox's is not a host directory", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      assert.strictEqual(yield* call(Command({ command: "pwd" }), { args: ["-P"] }, context(dir)), `${dir}\n`)
      // A VirtualSandbox's cwd is a virtual path: its host directories are its mounts, not its cwd.
      const virtual = { ...context("/home/user"), sandbox: { ...context("/home/user").sandbox, hostDirectories: () => [] } }
      assert.strictEqual(yield* call(Command({ command: "pwd" }), { args: ["-P"] }, virtual), `${realpathSync(process.cwd())}\n`)
    }))

  it.live("refuses a model cwd outside its own, symlinks and .. included", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const outside = yield* tempDir
      symlinkSync(outside, join(dir, "escape"))
      const tool = Command({ cwd: dir, command: "pwd" })
      for (const cwd of ["/", "..", "escape", outside]) {
        assert.strictEqual(
          yield* failure(tool, { cwd }, context(dir)),
          `Command failed: cwd ${cwd} is outside ${dir}, the directory this tool runs in; give a directory inside it`
        )
      }
    }))

  it.live("answers a non-zero exit with the output and the exit code", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const tool = Command({ cwd: dir, command: "bash" })
      assert.strictEqual(
        yield* call(tool, { args: ["-c", "echo out; echo err >&2; exit 3"] }, context(dir)),
        "out\nerr\n\n(exit code: 3)"
      )
      assert.strictEqual(yield* call(tool, { args: ["-c", "exit 4"] }, context(dir)), "(exit code: 4)")
      assert.strictEqual(yield* call(tool, { args: ["-c", "true"] }, context(dir)), "")
    }))

  it.live("keeps the first 2,000 lines of a long output and says it was cut", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const text = yield* call(Command({ cwd: dir, command: "seq" }), { args: ["1", "3000"] }, context(dir))
      const head = Array.from({ length: 2000 }, (_, i) => String(i + 1)).join("\n")
      assert.strictEqual(text, `${head}\n\n(output truncated)`)
    }))

  it.live("fails with the timeout in seconds when the command runs too long", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      assert.strictEqual(
        yield* failure(Command({ cwd: dir, command: "sleep" }), { args: ["1000"], timeout: 1 }, context(dir)),
        "Command timed out after 1 seconds"
      )
    }))

  it.live("on timeout, shows what the command printed until then, then the timeout", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      assert.strictEqual(
        yield* failure(Command({ cwd: dir, command: "bash" }), { args: ["-c", "echo started; echo warn >&2; sleep 1000"], timeout: 1 }, context(dir)),
        "started\nwarn\n\nCommand timed out after 1 seconds"
      )
    }))

  it.live("fails readably when the executable or the directory is missing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      assert.strictEqual(
        yield* failure(Command({ cwd: dir, command: "condukt-no-such-command" }), {}, context(dir)),
        "Command failed: Cannot run condukt-no-such-command: command not found"
      )
      assert.strictEqual(
        yield* failure(Command({ cwd: dir, command: "pwd" }), { cwd: "missing" }, context(dir)),
        `Command failed: Cannot run pwd: working directory ${dir}/missing does not exist`
      )
    }))

  it.live("rejects arguments that are not an array of strings", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      assert.strictEqual(
        yield* failure(Command({ cwd: dir, command: "git" }), { args: "status --short" }, context(dir)),
        "Invalid arguments for tool Git: args: Expected array"
      )
    }))
})

/** What a program gives Command, with a scripted runner in place of the host's processes. */
const scripted = (script: ScriptedProcesses.Script) =>
  Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, ProcessBudget.layer(), ScriptedProcesses.layer(script))

const callScripted = (tool: ReturnType<typeof Command>, input: unknown, ctx: Tool.Context) =>
  Effect.flatMap(tool.decode(input), (args) => tool.call(args, ctx))

const failureScripted = (tool: ReturnType<typeof Command>, input: unknown, ctx: Tool.Context) =>
  Effect.map(Effect.flip(callScripted(tool, input, ctx)), (error) => (typeof error === "string" ? error : error.message))

describe("Command on a scripted ProcessRunner (no process)", () => {
  it.effect("asks the runner for the command, its args verbatim, its cwd, the tool's env and the secrets; redacts the answer", () =>
    Effect.gen(function*() {
      const tool = Command({ cwd: "/repo", command: "git", env: { GIT_AUTHOR_NAME: "bot", SHARED: "from tool" } })
      const ctx = context("/sandbox", { GH_TOKEN: Redacted.make("ghp_s3cret"), SHARED: Redacted.make("from secret") })
      const text = yield* callScripted(tool, { args: ["log", "--format=%s; rm -rf /", "$(id)"], timeout: 7 }, ctx)
      assert.strictEqual(text, "pushed with [REDACTED:GH_TOKEN]\n\n(exit code: 1)")
      assert.deepStrictEqual(yield* ScriptedProcesses.commands, [
        ProcessRunner.make("git", ["log", "--format=%s; rm -rf /", "$(id)"], {
          cwd: "/repo",
          env: { GIT_AUTHOR_NAME: "bot", SHARED: "from secret", GH_TOKEN: "ghp_s3cret" },
          timeout: Duration.seconds(7)
        })
      ])
    }).pipe(Effect.provide(scripted({ run: () => ({ output: "pushed with ghp_s3cret\n", exitCode: 1 }) }))))

  it.effect("a timeout shows what the command printed until then, then the timeout in seconds", () =>
    Effect.gen(function*() {
      const error = yield* failureScripted(Command({ cwd: "/repo", command: "git" }), { args: ["fetch"] }, context("/repo"))
      assert.strictEqual(error, "Fetching origin\n\nCommand timed out after 120 seconds")
      assert.deepStrictEqual((yield* ScriptedProcesses.commands).map((command) => command.timeout), [Duration.seconds(120)])
    }).pipe(Effect.provide(scripted({
      run: (command) => new ProcessRunner.TimedOut({ timeoutMs: Duration.toMillis(command.timeout!), output: "Fetching origin\n", truncated: false })
    }))))

  it.effect("a command that cannot start fails with the runner's reason", () =>
    Effect.gen(function*() {
      const error = yield* failureScripted(Command({ cwd: "/repo", command: "gh" }), {}, context("/repo"))
      assert.strictEqual(error, "Command failed: Cannot run gh: command not found")
    }).pipe(Effect.provide(scripted({ run: () => new ProcessRunner.SpawnFailed({ description: "command not found" }) }))))
})

/** A session whose model calls `tool` once per input, then ends: the results, events, history and requests. */
const runCalls = (
  tool: ReturnType<typeof Command>,
  inputs: ReadonlyArray<unknown>,
  sandbox: LocalSandbox.Options
) =>
  Effect.gen(function*() {
    const agent = Agent.make({ name: "runner", model: "test:x", tools: [tool] })
    const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer(sandbox) })
    const events = yield* Stream.runCollect(session.stream("go"))
    const history = yield* session.history
    const requests = yield* (yield* TestModel.TestModel).requests
    const results = history.flatMap((m) => (m._tag === "ToolResultMessage" ? [{ content: m.content, isError: m.isError }] : []))
    return { events: Array.from(events), history, requests, results }
  }).pipe(
    Effect.scoped,
    Effect.provide(Layer.mergeAll(
      TestModel.layer([...inputs.map((input) => TestModel.toolCall(tool.name, input)), TestModel.text("done")]),
      Condukt.layer
    ))
  )

describe("Command in a session", () => {
  it.live("runs in the sandbox's working directory by default, and in a cwd inside it, relative or absolute", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      mkdirSync(join(dir, "sub"))
      const { results } = yield* runCalls(
        Command({ command: "pwd" }),
        [{ args: ["-P"] }, { args: ["-P"], cwd: "sub" }, { args: ["-P"], cwd: join(dir, "sub") }, { args: ["-P"], cwd: "sub/.." }],
        { cwd: dir }
      )
      assert.deepStrictEqual(results, [
        { content: `${dir}\n`, isError: false },
        { content: `${dir}/sub\n`, isError: false },
        { content: `${dir}/sub\n`, isError: false },
        { content: `${dir}\n`, isError: false }
      ])
    }))

  it.live("takes a cwd in any of the sandbox's allowed paths and refuses one outside them all, with a sentence the model reads", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const shared = yield* tempDir
      const { results } = yield* runCalls(
        Command({ command: "pwd" }),
        [{ args: ["-P"], cwd: shared }, { cwd: ".." }, { cwd: "/" }],
        { cwd: dir, allowedPaths: [shared] }
      )
      const refusal = (cwd: string) =>
        `Error: Command failed: cwd ${cwd} is outside ${dir}, ${shared}, the directories this tool runs in; give a directory inside one`
      assert.deepStrictEqual(results, [
        { content: `${shared}\n`, isError: false },
        { content: refusal(".."), isError: true },
        { content: refusal("/"), isError: true }
      ])
    }))

  it.live("a value of the tool's env that the program prints reaches the model, the events and the history as its name", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const token = "ghp_tool_env_9c1e04"
      const { events, history, requests, results } = yield* runCalls(
        Command({ command: "printenv", env: { GH_TOKEN: token, GIT_PAGER: "cat" } }),
        [{ args: ["GH_TOKEN"] }, { args: ["GIT_PAGER"] }],
        { cwd: dir }
      )
      // Values under 4 bytes are left: they would match ordinary text (Redactor.MIN_SECRET_BYTES).
      assert.deepStrictEqual(results, [
        { content: "[REDACTED:GH_TOKEN]\n", isError: false },
        { content: "cat\n", isError: false }
      ])
      assert.deepStrictEqual(requests[1]!.messages.at(-1), {
        _tag: "ToolResultMessage",
        callId: "call_1",
        name: "Printenv",
        content: "[REDACTED:GH_TOKEN]\n",
        isError: false
      })
      assert.notInclude(JSON.stringify({ events, history, requests }), token)
    }))
})
