/** The secret values a document names, each under the name it is redacted as. */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted } from "effect"
import { Secrets, Workflow } from "../src/index.ts"

const SOURCE = `
workflow "w" {
  input "ids" {
    type = "array"
  }
  input "extra" {
    type = "string"
  }
  mcp_server "tracker" {
    transport = "http"
    url = "http://127.0.0.1:1/mcp"
    auth = { type = "bearer", env = "TRACKER_TOKEN" }
    headers = { "x-api-key" = "key-literal-1", accept = "application/json" }
  }
  mcp_server "vault-api" {
    transport = "http"
    url = "http://127.0.0.1:1/mcp"
    auth = { type = "client_credentials", token_url = "http://127.0.0.1:1/token", client_id_env = "VAULT_CLIENT_ID", client_secret = "client-secret-1" }
  }
  mcp_server "fs" {
    transport = "stdio"
    command = "fs-mcp"
    env = ["FS_ROOT_TOKEN", input.extra]
  }
  http "call" {
    method = "GET"
    url = "http://127.0.0.1:1/"
    headers = { authorization = "Bearer bearer-literal-1", "x-trace" = "abc" }
  }
  map "each" {
    over = input.ids
    as = "i"
    http {
      method = "GET"
      url = "http://127.0.0.1:1/"
      headers = { cookie = "session=cookie-literal-1", authorization = "Bearer \${i}" }
    }
  }
}`

describe("Secrets", () => {
  it.effect("names host variables (not one an input names), literal auth secrets and literal credential headers, nothing else", () =>
    Effect.gen(function*() {
      const document = yield* Workflow.parse(SOURCE, "w.hcl")
      const secrets = Secrets.of(document)
      const values: Record<string, string> = {}
      for (const [name, secret] of Object.entries(secrets)) values[name] = Redacted.value(yield* secret.resolve)
      assert.deepStrictEqual(values, {
        TRACKER_TOKEN: "from-env-1",
        MCP_TRACKER_X_API_KEY: "key-literal-1",
        VAULT_CLIENT_ID: "client-id-1",
        MCP_VAULT_API_CLIENT_SECRET: "client-secret-1",
        FS_ROOT_TOKEN: "from-env-2",
        HTTP_CALL_AUTHORIZATION: "Bearer bearer-literal-1",
        HTTP_CALL_AUTHORIZATION_CREDENTIAL: "bearer-literal-1",
        HTTP_EACH_COOKIE: "session=cookie-literal-1"
      })
    }).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ TRACKER_TOKEN: "from-env-1", FS_ROOT_TOKEN: "from-env-2", VAULT_CLIENT_ID: "client-id-1" })))))
})
