import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { FetchLike } from "@modelcontextprotocol/client"
import { boundedFetch, ERROR_BODY_BYTES } from "../../src/internal/boundedFetch.ts"
import { Credentials } from "../../src/internal/credentials.ts"
import { tooLarge } from "../../src/internal/oversized.ts"

/** A base fetch answering `body` (in `chunks` pieces) with `status` and `type`, and what it was asked. */
const answering = (status: number, type: string, chunks: ReadonlyArray<string>): FetchLike => () =>
  Promise.resolve(
    new Response(
      new ReadableStream<Uint8Array>({
        start: (controller) => {
          for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
          controller.close()
        }
      }),
      { status, headers: { "content-type": type } }
    )
  )

const post = (id: number) => ({ method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call" }), headers: { authorization: "Bearer tok-123456" } })

const text = (fetchFn: FetchLike, init: RequestInit) => Effect.promise(() => fetchFn("http://x/mcp", init).then((r) => r.text()))

describe("boundedFetch", () => {
  it.effect("cuts an error status's body and records the credential it sent", () =>
    Effect.gen(function*() {
      const credentials = new Credentials("p", (t) => t)
      const body = yield* text(boundedFetch(answering(500, "text/plain", ["e".repeat(ERROR_BODY_BYTES), "more"]), 64, credentials), post(1))
      assert.strictEqual(body, "e".repeat(ERROR_BODY_BYTES))
      assert.strictEqual(credentials.reason("echo tok-123456"), "echo [REDACTED:p.access_token]")
    }))

  it.effect("replaces a JSON answer past the bound by a too-large error for each request it answered", () =>
    Effect.gen(function*() {
      const credentials = new Credentials("p", (t) => t)
      const body = yield* text(boundedFetch(answering(200, "application/json", ["x".repeat(40), "x".repeat(40)]), 64, credentials), post(7))
      assert.strictEqual(body, JSON.stringify([tooLarge(7, 64)]))
    }))

  it.effect("skips an event past the bound to its end, answers its request with a too-large error, and passes the next events", () =>
    Effect.gen(function*() {
      const credentials = new Credentials("p", (t) => t)
      const big = `event: message\ndata: {"result":{"text":"${"x".repeat(100)}"},"jsonrpc":"2.0","id":9}\n\n`
      const next = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"
      const body = yield* text(
        boundedFetch(answering(200, "text/event-stream", [big.slice(0, 50), big.slice(50), next]), 80, credentials),
        post(9)
      )
      assert.strictEqual(body, `${big.slice(0, 50)}\n\nevent: message\ndata: ${JSON.stringify(tooLarge(9, 80))}\n\n${next}`)
    }))

  it.effect("drops a notification past the bound without answering the request for it", () =>
    Effect.gen(function*() {
      const credentials = new Credentials("p", (t) => t)
      const noisy = `event: message\ndata: {"method":"notifications/message","params":{"data":"${"x".repeat(100)}"},"jsonrpc":"2.0"}\n\n`
      const answer = "event: message\ndata: {\"result\":{},\"jsonrpc\":\"2.0\",\"id\":9}\n\n"
      const body = yield* text(boundedFetch(answering(200, "text/event-stream", [noisy, answer]), 80, credentials), post(9))
      // The line that passed the bound is dropped whole; what went before it is ended as an event.
      assert.strictEqual(body, `event: message\n\n\n${answer}`)
    }))
})
