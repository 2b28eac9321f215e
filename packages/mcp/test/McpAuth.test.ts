import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { Secret } from "@condukt/core"
import { ScriptedProcesses, TestModel } from "@condukt/testing"
import { McpAuth, McpClient, McpError, McpServer } from "../src/index.ts"
import { protectedServer, results, runWith } from "./support.ts"

describe("McpAuth", () => {
  it.live("bearer: the server sees the token from a secret ref", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      srv.accept.add("s3cret-token")
      const { events } = yield* runWith(
        [McpServer.http({ name: "p", url: `${srv.url}/mcp`, auth: McpAuth.bearer(Secret.static("s3cret-token")) })],
        [TestModel.toolCall("p.whoami", {}), TestModel.text("done")]
      )
      // The token is the server's credential: echoed back, it is redacted.
      assert.deepStrictEqual(results(events), [{ name: "p.whoami", content: "caller with [REDACTED:p.bearer_token]", isError: false }])
      assert.isTrue(srv.seen.length > 0 && srv.seen.every((token) => token === "s3cret-token"))
    }).pipe(Effect.scoped))

  it.live("client credentials: a token fetched once, cached, fetched again once on a 401", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      const auth = McpAuth.clientCredentials({ tokenUrl: `${srv.url}/token`, clientId: "app", clientSecret: "shh", scope: "tools" })
      const { events } = yield* runWith([McpServer.http({ name: "p", url: `${srv.url}/mcp`, auth })], [
        TestModel.toolCall("p.whoami", {}),
        TestModel.text("done")
      ])
      // The access token is a credential of the server's too.
      assert.deepStrictEqual(results(events), [{ name: "p.whoami", content: "caller with [REDACTED:p.access_token]", isError: false }])
      // One token for the handshake, the listing and the call; HTTP Basic client authentication.
      assert.deepStrictEqual(srv.issued, [`Basic ${Buffer.from("app:shh").toString("base64")}`])
    }).pipe(Effect.scoped))

  it.live("client credentials from secret refs: the token URL, the client id and the secret each from a variable, in code and in the map form", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      const env = { TOKEN_URL: `${srv.url}/token`, CLIENT_ID: "app-from-env", CLIENT_SECRET: "shh-from-env" }
      const inCode = McpServer.http({
        name: "p",
        url: `${srv.url}/mcp`,
        auth: McpAuth.clientCredentials({ tokenUrl: Secret.env("TOKEN_URL"), clientId: Secret.env("CLIENT_ID"), clientSecret: Secret.env("CLIENT_SECRET") })
      })
      const inMapForm = McpServer.fromConfig({
        name: "q",
        transport: "streamable_http",
        url: `${srv.url}/mcp`,
        auth: { type: "client_credentials", token_url_env: "TOKEN_URL", client_id_env: "CLIENT_ID", client_secret_env: "CLIENT_SECRET" }
      })
      const { events } = yield* runWith([inCode, inMapForm], [
        TestModel.reply(TestModel.toolCall("p.whoami", {}), TestModel.toolCall("q.whoami", {})),
        TestModel.text("done")
      ]).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env))))
      assert.deepStrictEqual(results(events), [
        { name: "p.whoami", content: "caller with [REDACTED:p.access_token]", isError: false },
        { name: "q.whoami", content: "caller with [REDACTED:q.access_token]", isError: false }
      ])
      const basic = `Basic ${Buffer.from("app-from-env:shh-from-env").toString("base64")}`
      assert.deepStrictEqual(srv.issued, [basic, basic])
    }).pipe(Effect.scoped))

  it.live("client credentials: a client id variable that is not set fails the start, naming it", () =>
    Effect.gen(function*() {
      const auth = McpAuth.clientCredentials({ tokenUrl: "http://127.0.0.1:1/token", clientId: Secret.env("NO_SUCH_CLIENT_ID"), clientSecret: "shh" })
      const declaration = McpServer.http({ name: "p", url: "http://127.0.0.1:1/mcp", auth }).declaration
      const error = yield* Effect.flip(Effect.scoped(McpClient.connect(declaration, {}, () => Effect.void)))
      assert.deepStrictEqual(
        error,
        new McpError.McpError({ server: "p", reason: new McpError.AuthSecretUnavailable({ description: "environment variable NO_SUCH_CLIENT_ID is not set" }) })
      )
    }).pipe(Effect.provide(ScriptedProcesses.layer({})), Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({})))))

  it.live("client credentials: a revoked token is replaced once and the request sent again", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      const auth = McpAuth.clientCredentials({ tokenUrl: `${srv.url}/token`, clientId: "app", clientSecret: "shh" })
      const { session } = yield* runWith([McpServer.http({ name: "p", url: `${srv.url}/mcp`, auth })], [
        TestModel.text("connected"),
        TestModel.toolCall("p.whoami", {}),
        TestModel.text("done")
      ])
      srv.accept.delete("token-1")
      const second = yield* session.run("again")
      assert.deepStrictEqual(
        second.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])),
        ["caller with [REDACTED:p.access_token_2]"]
      )
      assert.strictEqual(srv.issued.length, 2)
    }).pipe(Effect.scoped))

  it.live("client credentials: a token endpoint that refuses fails the connection with TokenRequestFailed", () =>
    Effect.gen(function*() {
      const srv = yield* protectedServer
      // The MCP endpoint answers 401 to the token request (its Basic credentials are no token).
      const tokenUrl = `${srv.url}/mcp`
      const auth = McpAuth.clientCredentials({ tokenUrl, clientId: "app", clientSecret: "shh" })
      const declaration = McpServer.http({ name: "p", url: `${srv.url}/mcp`, auth }).declaration
      const error = yield* Effect.flip(Effect.scoped(McpClient.connect(declaration, {}, () => Effect.void)))
      assert.deepStrictEqual(error, new McpError.McpError({ server: "p", reason: new McpError.TokenRequestFailed({ tokenUrl, description: "HTTP 401" }) }))
      assert.strictEqual(error.message, `token request to ${tokenUrl} failed: HTTP 401`)
    }).pipe(Effect.scoped, Effect.provide(ScriptedProcesses.layer({}))))
})
