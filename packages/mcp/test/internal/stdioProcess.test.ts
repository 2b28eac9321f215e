/**
 * The stdio transport on a scripted ProcessRunner: no process is spawned. A scripted MCP server
 * answers `initialize`, `tools/list` and `tools/call` line by line, so what the transport asks the
 * runner for (file, args, cwd, env) and what the client makes of the answers are asserted exactly.
 */
import { assert, describe, it } from "@effect/vitest"
import { ProcessRunner, Secret } from "@condukt/core"
import { ScriptedProcesses } from "@condukt/testing"
import { Effect, Exit, Redacted, Scope } from "effect"
import * as McpClient from "../../src/McpClient.ts"
import { AuthSecretUnavailable, ConnectFailed, McpCallFailed, McpError, TransportDown } from "../../src/McpError.ts"
import * as McpServer from "../../src/McpServer.ts"
import { FIRST_WRITE_CHARS, WRITE_CHARS } from "../../src/internal/jsonLines.ts"

interface Request {
  readonly id?: number
  readonly method: string
  readonly params?: { readonly protocolVersion?: string; readonly name?: string; readonly arguments?: { readonly text?: string } }
}

/**
 * An MCP server with one tool, `echo`, speaking JSON-RPC lines; `stdin` keeps every request's method.
 * `call` may answer a `tools/call` itself (true when it did).
 */
const server = (
  methods: Array<string>,
  call: (name: string | undefined, id: number, process: ScriptedProcesses.ScriptedProcess) => boolean = () => false
) => (_command: ProcessRunner.Command, process: ScriptedProcesses.ScriptedProcess) => {
  const answer = (id: number, result: unknown) => process.stdout(`${JSON.stringify({ jsonrpc: "2.0", id, result })}\n`)
  return (input: string) => {
    for (const line of input.split("\n").filter((l) => l !== "")) {
      const request = JSON.parse(line) as Request
      methods.push(request.method)
      if (request.id === undefined) continue
      if (request.method === "initialize") {
        answer(request.id, { protocolVersion: request.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "scripted", version: "1" } })
      } else if (request.method === "tools/list") {
        answer(request.id, { tools: [{ name: "echo", description: "Echoes", inputSchema: { type: "object", properties: { text: { type: "string" } } } }] })
      } else if (request.method === "tools/call") {
        if (!call(request.params?.name, request.id, process)) answer(request.id, { content: [{ type: "text", text: `echo: ${request.params?.arguments?.text}` }] })
      } else {
        // A 2025 server: `server/discover` is a method it does not know, so the client falls back to `initialize`.
        process.stdout(`${JSON.stringify({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "Method not found" } })}\n`)
      }
    }
  }
}

describe("stdio transport on a scripted ProcessRunner (no process)", () => {
  const methods: Array<string> = []
  const writes: Array<string> = []

  it.effect("spawns the declared command with its args, cwd and env (literals, secrets, Secret values) and talks MCP over it", () =>
    Effect.gen(function*() {
      const declaration = McpServer.stdio({
        name: "fx",
        command: "npx",
        args: ["-y", "@scripted/server"],
        cwd: "/srv",
        env: { LOG_LEVEL: "debug", API_KEY: Secret.static("k-123") }
      }).declaration
      const scope = yield* Scope.make()
      const connection = yield* Scope.provide(McpClient.connect(declaration, { UNUSED: Redacted.make("x") }, () => Effect.void), scope)
      assert.deepStrictEqual(connection.descriptors.map((tool) => tool.name), ["echo"])
      assert.strictEqual(yield* McpClient.caller(declaration, "echo")(connection, { text: "hi" }), "echo: hi")
      assert.deepStrictEqual(yield* ScriptedProcesses.commands, [
        ProcessRunner.make("npx", ["-y", "@scripted/server"], { cwd: "/srv", env: { LOG_LEVEL: "debug", API_KEY: "k-123" } })
      ])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(methods, ["server/discover", "initialize", "notifications/initialized", "tools/list", "tools/call"])
    }).pipe(Effect.provide(ScriptedProcesses.layer({ spawn: server(methods) }))))

  it.effect("without a cwd the server runs in the process's working directory", () =>
    Effect.gen(function*() {
      const declaration = McpServer.stdio({ name: "fx", command: "server" }).declaration
      yield* Effect.scoped(McpClient.connect(declaration, {}, () => Effect.void))
      assert.deepStrictEqual((yield* ScriptedProcesses.commands).map((command) => command.cwd), ["."])
    }).pipe(Effect.provide(ScriptedProcesses.layer({ spawn: server([]) }))))

  it.effect("a command that cannot start fails the connection with the runner's reason", () =>
    Effect.gen(function*() {
      const declaration = McpServer.stdio({ name: "fx", command: "condukt-no-such-server" }).declaration
      const error = yield* Effect.flip(Effect.scoped(McpClient.connect(declaration, {}, () => Effect.void)))
      assert.deepStrictEqual(error, new McpError({ server: "fx", reason: new ConnectFailed({ description: "command not found" }) }))
      assert.strictEqual(error.message, "command not found")
    }).pipe(Effect.provide(ScriptedProcesses.layer({ spawn: () => new ProcessRunner.SpawnFailed({ description: "command not found" }) }))))

  it.effect("a server that exits during initialize fails the connection with its last stderr line", () =>
    Effect.gen(function*() {
      const declaration = McpServer.stdio({ name: "fx", command: "server" }).declaration
      const error = yield* Effect.flip(Effect.scoped(McpClient.connect(declaration, {}, () => Effect.void)))
      assert.strictEqual(error.message, "the server exited during initialize: Error: no config file")
    }).pipe(Effect.provide(ScriptedProcesses.layer({
      spawn: (_command, process) => () => {
        process.stderr("starting\nError: no config file\n")
        process.exit(1)
      }
    }))))

  it.effect("a failed call is an McpError of the server: a JSON-RPC error is McpCallFailed, a dead server TransportDown", () =>
    Effect.gen(function*() {
      const declaration = McpServer.stdio({ name: "fx", command: "server" }).declaration
      const connection = yield* McpClient.connect(declaration, {}, () => Effect.void)
      // A failed call's error is an McpError (an `isError` result fails with its text instead).
      const failed = (tool: string) =>
        Effect.flatMap(Effect.flip(McpClient.caller(declaration, tool)(connection, {})), (e) => (typeof e === "string" ? Effect.die(e) : Effect.succeed(e)))
      const refused = yield* failed("missing")
      assert.deepStrictEqual(
        refused,
        new McpError({ server: "fx", reason: new McpCallFailed({ tool: "missing", description: "Unknown tool: missing" }) })
      )
      assert.strictEqual(refused.message, "MCP server fx refused missing: Unknown tool: missing")
      // One reason handled by its tag; the call's other failures pass through.
      const crash = McpClient.caller(declaration, "crash")(connection, {}).pipe(
        Effect.catchReason("McpError", "TransportDown", (reason, error) => Effect.succeed(`${error.server}: ${reason.description}`))
      )
      assert.strictEqual(yield* crash, "fx: the server exited: fatal: out of memory")
      const down = yield* failed("echo")
      assert.deepStrictEqual(down, new McpError({ server: "fx", reason: new TransportDown({ description: "the server exited: fatal: out of memory" }) }))
      assert.strictEqual(down.message, "MCP server fx is down (the server exited: fatal: out of memory); its tools cannot be called until it is back")
    }).pipe(
      Effect.scoped,
      Effect.provide(ScriptedProcesses.layer({
        spawn: server([], (name, id, process) => {
          if (name === "missing") {
            process.stdout(`${JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32602, message: "Unknown tool: missing" } })}\n`)
          } else if (name === "crash") {
            process.stderr("fatal: out of memory\n")
            process.exit(1)
          }
          return name === "missing" || name === "crash"
        })
      }))
    ))

  it.effect("a burst of calls reaches the server as it is made: a small first write, then writes of 16 KiB, the rest at the turn's end", () =>
    Effect.gen(function*() {
      const declaration = McpServer.stdio({ name: "fx", command: "server" }).declaration
      const connection = yield* McpClient.connect(declaration, {}, () => Effect.void)
      const call = McpClient.caller(declaration, "echo")
      const answers = yield* Effect.forEach(Array.from({ length: 300 }, (_, i) => i), (i) => call(connection, { text: `m${i}` }), {
        concurrency: "unbounded"
      })
      assert.deepStrictEqual(answers, Array.from({ length: 300 }, (_, i) => `echo: m${i}`))
      // Each write the server read, as the number of calls in it and its size.
      const sizes = writes.map((input) => input.length)
      const calls = writes.map((input) => input.split("\n").filter((line) => line.includes("tools/call")).length)
      assert.strictEqual(calls.reduce((a, b) => a + b, 0), 300)
      assert.isAtLeast(calls.length, 3)
      assert.isAtLeast(sizes[0]!, FIRST_WRITE_CHARS)
      assert.isBelow(sizes[0]!, 2 * FIRST_WRITE_CHARS)
      for (const size of sizes.slice(1, -1)) {
        assert.isAtLeast(size, WRITE_CHARS)
        assert.isBelow(size, WRITE_CHARS + 1024)
      }
      assert.isBelow(sizes.at(-1)!, WRITE_CHARS + 1024)
    }).pipe(
      Effect.scoped,
      Effect.provide(ScriptedProcesses.layer({
        spawn: (command, process) => {
          const answer = server([])(command, process)
          let ready = false
          return (input) => {
            // The writes once the connection is up: the burst's.
            if (ready) writes.push(input)
            if (input.includes("tools/list")) ready = true
            answer(input)
          }
        }
      }))
    ))

  it.effect("a Secret of the env that cannot be resolved fails the connection with AuthSecretUnavailable, before any spawn", () =>
    Effect.gen(function*() {
      const declaration = McpServer.stdio({ name: "fx", command: "server", env: { API_KEY: Secret.make(Effect.fail("vault is sealed")) } }).declaration
      const error = yield* Effect.flip(Effect.scoped(McpClient.connect(declaration, {}, () => Effect.void)))
      assert.deepStrictEqual(error, new McpError({ server: "fx", reason: new AuthSecretUnavailable({ description: "env API_KEY: vault is sealed" }) }))
      assert.strictEqual(error.message, "env API_KEY: vault is sealed")
      assert.deepStrictEqual(yield* ScriptedProcesses.commands, [])
    }).pipe(Effect.provide(ScriptedProcesses.layer({}))))
})
