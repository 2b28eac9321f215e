import { Condukt } from "@condukt/node"
import { Processes, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { protectedServer } from "../../mcp/test/support.ts"
import { Workflow } from "../src/index.ts"

const everything = path.resolve(import.meta.dirname, "../node_modules/@modelcontextprotocol/server-everything/dist/index.js")

/**
 * server-everything over stdio, started through `sh` so it writes its pid first (`exec` keeps the
 * pid): the test can then tell whether the process outlived the run.
 */
const server = (pidFile: string, extra = "") => `
  mcp_server "everything" {
    transport = "stdio"
    command = "sh"
    args = ["-c", "echo $$ > ${pidFile}; exec '${process.execPath}' '${everything}' stdio"]
    ${extra}
  }`

const run = (source: string, inputs: Record<string, unknown> = {}) =>
  Effect.flatMap(Workflow.parse(source, "mcp.hcl"), (document) => Workflow.run(document, { inputs }))

const tempPidFile = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "wf-mcp-")), "server.pid")
const pidIn = (file: string) => Number(fs.readFileSync(file, "utf8").trim())

describe("McpServers", () => {
  it.live("a tool step calls <server>.<tool> over stdio, and the server is gone when the run ends", () =>
    Effect.gen(function*() {
      const pidFile = tempPidFile()
      const result = yield* run(`
workflow "echo" {
  ${server(pidFile)}
  tool "echo" {
    id = "everything.echo"
    args = { message = "hello" }
  }
  tool "sum" {
    id = "everything.get-sum"
    args = { a = 2, b = 3 }
  }
  output = { echo = task.echo.output, sum = task.sum.output }
}`)
      assert.deepStrictEqual(result.output, { echo: "Echo: hello", sum: "The sum of 2 and 3 is 5." })
      assert.isTrue(yield* Processes.isDead(pidIn(pidFile)))
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("a prefix renames the tools", () =>
    Effect.gen(function*() {
      const pidFile = tempPidFile()
      const result = yield* run(`
workflow "echo" {
  ${server(pidFile, `prefix = "ev"`)}
  tool "echo" {
    id = "ev.echo"
    args = { message = "hi" }
  }
  output = task.echo.output
}`)
      assert.strictEqual(result.output, "Echo: hi")
      assert.isTrue(yield* Processes.isDead(pidIn(pidFile)))
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("an agent step uses an MCP tool from its tools list", () =>
    Effect.gen(function*() {
      const pidFile = tempPidFile()
      const result = yield* run(`
workflow "agent" {
  runtime {
    model = "test:model"
  }
  ${server(pidFile)}
  agent "ask" {
    input = "Echo hello"
    tools = ["everything.echo"]
  }
  output = task.ask.output
}`)
      assert.strictEqual(result.output, "It said: Echo: hello")
      const requests = yield* Effect.flatMap(Effect.service(TestModel.TestModel), (model) => model.requests)
      assert.deepStrictEqual(requests[0]!.tools.map((tool) => tool.name), ["everything.echo"])
      const last = requests[1]!.messages.at(-1)!
      assert.deepStrictEqual(last._tag === "ToolResultMessage" ? [last.content, last.isError] : [], ["Echo: hello", false])
      assert.isTrue(yield* Processes.isDead(pidIn(pidFile)))
    }).pipe(
      Effect.provide(TestModel.layer([TestModel.toolCall("everything.echo", { message: "hello" }), TestModel.text("It said: Echo: hello")])),
      Effect.provide(Condukt.layer)
    ))

  it.live("the servers close when a step fails the run", () =>
    Effect.gen(function*() {
      const pidFile = tempPidFile()
      const error = yield* Effect.flip(run(`
workflow "broken" {
  ${server(pidFile)}
  tool "missing" {
    id = "everything.nope"
  }
}`))
      assert.strictEqual(error.reason, "UnknownTool")
      assert.isTrue(yield* Processes.isDead(pidIn(pidFile)))
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("a server that cannot start fails the run before any step, naming the server", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(run(`
workflow "broken" {
  mcp_server "tracker" {
    transport = "stdio"
    command = "no-such-mcp-server"
  }
  tool "issue" {
    id = "tracker.get_issue"
  }
}`))
      assert.deepStrictEqual([error.reason, error.message], ["McpFailed", "MCP server tracker: command not found"])
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("an auth it cannot use is refused with a sentence before any server starts", () =>
    Effect.gen(function*() {
      const refused = (transport: string, auth: string) =>
        Effect.map(
          Effect.flip(run(`
workflow "broken" {
  mcp_server "tracker" {
    transport = "${transport}"
    ${transport === "stdio" ? `command = "tracker-mcp"` : `url = "http://127.0.0.1:1/mcp"`}
    auth = ${auth}
  }
  tool "issue" {
    id = "tracker.get_issue"
  }
}`)),
          (error) => error.message
        )
      assert.strictEqual(
        yield* refused("streamable_http", `{ type = "magic" }`),
        `MCP server tracker: auth type must be "bearer" or "client_credentials", got "magic"`
      )
      assert.strictEqual(yield* refused("http", `{ type = "bearer" }`), "MCP server tracker: a bearer auth needs env, static or op")
      assert.strictEqual(
        yield* refused("http_sse", `{ type = "client_credentials", token_url = "http://127.0.0.1:1/token", client_id = "ci" }`),
        "MCP server tracker: a client_credentials auth needs token_url, client_id and client_secret (each also as _env or _static)"
      )
      assert.strictEqual(
        yield* refused("http", `{ type = "client_credentials", audience = "x" }`),
        "MCP server tracker: unknown client_credentials auth keys audience; it takes type, token_url, token_url_env, token_url_static, client_id, client_id_env, client_id_static, client_secret, client_secret_env, client_secret_static, scope"
      )
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("inputs in a stdio server's command, args and env are evaluated before it starts", () =>
    Effect.gen(function*() {
      const pidFile = tempPidFile()
      const outFile = path.join(path.dirname(pidFile), "env.txt")
      const saved = process.env["WF_MCP_GREETING"]
      process.env["WF_MCP_GREETING"] = "hello from the host"
      const result = yield* Effect.ensuring(
        run(`
workflow "inputs" {
  input "shell" {
    type = "string"
  }
  input "pid_file" {
    type = "string"
  }
  input "variable" {
    type = "string"
  }
  mcp_server "everything" {
    transport = "stdio"
    command = input.shell
    args = ["-c", "echo $$ > \${input.pid_file}; printenv \${input.variable} > ${outFile}; exec '${process.execPath}' '${everything}' stdio"]
    env = [input.variable]
  }
  tool "echo" {
    id = "everything.echo"
    args = { message = "hi" }
  }
  output = task.echo.output
}`, { shell: "sh", pid_file: pidFile, variable: "WF_MCP_GREETING" }),
        Effect.sync(() => (saved === undefined ? delete process.env["WF_MCP_GREETING"] : (process.env["WF_MCP_GREETING"] = saved)))
      )
      assert.strictEqual(result.output, "Echo: hi")
      assert.strictEqual(fs.readFileSync(outFile, "utf8"), "hello from the host\n")
      assert.isTrue(yield* Processes.isDead(pidIn(pidFile)))
    }).pipe(Effect.provide(Condukt.layer)))

  it.live("inputs in an http server's url and headers are evaluated before it connects", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      srv.accept.add("tok-from-input")
      const result = yield* run(`
workflow "inputs" {
  input "base" {
    type = "string"
  }
  input "token" {
    type = "string"
  }
  mcp_server "tracker" {
    transport = "streamable_http"
    url = "\${input.base}/mcp"
    headers = { Authorization = "Bearer \${input.token}" }
  }
  tool "me" {
    id = "tracker.whoami"
  }
  output = task.me.output
}`, { base: srv.url, token: "tok-from-input" })
      // The Authorization value sent is the server's credential: echoed back, it is redacted.
      assert.strictEqual(result.output, "caller with [REDACTED:tracker.access_token]")
      assert.isTrue(srv.seen.length > 0 && srv.seen.every((token) => token === "tok-from-input"))
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("inputs in an http server's auth are evaluated before it connects: a bearer token, a token_url", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      srv.accept.add("tok-from-input")
      const port = new URL(srv.url).port
      const tracker = (auth: string) => `
workflow "auth" {
  input "token" {
    type = "string"
  }
  input "port" {
    type = "integer"
  }
  mcp_server "tracker" {
    transport = "http"
    url = "http://127.0.0.1:\${inputs.port}/mcp"
    auth = ${auth}
  }
  tool "me" {
    id = "tracker.whoami"
  }
  output = task.me.output
}`
      const bearer = yield* run(tracker(`{ type = "bearer", static = "\${inputs.token}" }`), { token: "tok-from-input", port: Number(port) })
      assert.strictEqual(bearer.output, "caller with [REDACTED:tracker.bearer_token]")
      assert.isTrue(srv.seen.length > 0 && srv.seen.every((token) => token === "tok-from-input"))
      const credentials = `{ type = "client_credentials", token_url = "http://127.0.0.1:\${inputs.port}/token", client_id = "app", client_secret = "\${inputs.token}" }`
      const exchanged = yield* run(tracker(credentials), { token: "s3cret", port: Number(port) })
      assert.strictEqual(exchanged.output, "caller with [REDACTED:tracker.access_token]")
      assert.deepStrictEqual(srv.issued, [`Basic ${Buffer.from("app:s3cret").toString("base64")}`])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))

  it.live("client_credentials takes the client id and secret from variables (client_id_env, client_secret_env)", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      const result = yield* run(`
workflow "cc" {
  mcp_server "tracker" {
    transport = "http"
    url = "${srv.url}/mcp"
    auth = {
      type = "client_credentials"
      token_url = "${srv.url}/token"
      client_id_env = "TRACKER_CLIENT_ID"
      client_secret_env = "TRACKER_CLIENT_SECRET"
    }
  }
  tool "me" {
    id = "tracker.whoami"
  }
  output = task.me.output
}`)
      assert.strictEqual(result.output, "caller with [REDACTED:tracker.access_token]")
      assert.deepStrictEqual(srv.issued, [`Basic ${Buffer.from("ci-from-env:cs-from-env").toString("base64")}`])
    }).pipe(
      Effect.scoped,
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ TRACKER_CLIENT_ID: "ci-from-env", TRACKER_CLIENT_SECRET: "cs-from-env" }))),
      Effect.provide(Condukt.layer)
    ))
})
