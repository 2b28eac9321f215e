/**
 * `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` in the environment redirect a program that only provides
 * `Condukt.layer` (the demo) to a loopback server replaying the vendor's stream: no code change.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import * as Loopback from "../packages/providers/test/loopback.ts"
import { exec, root } from "./support/exec.ts"

const node = path.join(root, "node_modules/.bin/node")

describe("provider environment", () => {
  it.live("ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL send the demo's run to the loopback server", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("anthropic-final.sse"))])
      const { exitCode, output } = yield* exec(node, ["examples/demo.ts"], {
        ANTHROPIC_API_KEY: "sk-ant-env-test",
        ANTHROPIC_BASE_URL: server.url,
        OPENAI_API_KEY: ""
      })
      assert.strictEqual(exitCode, 0, output)
      assert.include(output, "Using the real model anthropic:claude-sonnet-4-6 (its key is set in the environment).")
      assert.include(output, "a.txt says alpha; b.txt says beta.")
      assert.deepStrictEqual([server.requests.length, server.requests[0]!.path, server.requests[0]!.headers["x-api-key"]], [
        1,
        "/v1/messages",
        "sk-ant-env-test"
      ])
    }), 120_000)

  it.live("OPENAI_API_KEY and OPENAI_BASE_URL do the same for OpenAI", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.start([Loopback.sse(Loopback.fixture("openai-final.sse"))])
      const { exitCode, output } = yield* exec(node, ["examples/demo.ts"], {
        ANTHROPIC_API_KEY: "",
        OPENAI_API_KEY: "sk-openai-env-test",
        OPENAI_BASE_URL: server.url
      })
      assert.strictEqual(exitCode, 0, output)
      assert.include(output, "Using the real model openai:gpt-4.1-mini (its key is set in the environment).")
      assert.include(output, "a.txt says alpha; b.txt says beta.")
      assert.deepStrictEqual([server.requests[0]!.path, server.requests[0]!.headers.authorization], [
        "/chat/completions",
        "Bearer sk-openai-env-test"
      ])
    }), 120_000)
})
