/**
 * The chat page of examples/server/chat-page in a real headless Chromium: `@ai-sdk/react`'s
 * `useChat` with `DefaultChatTransport`, bundled by esbuild, served by the test from one node:http
 * server on loopback that hands every path but the page's to a web `Request → Response` handler.
 * A person types a message, sees the streamed answer and a tool call waiting, approves it from
 * the page, and sees the call's output and the run's final text.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema, type Scope } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { Readable } from "node:stream"
import type { Page } from "playwright-core"
import { bundle, launchBrowser } from "../../../test/support/browser.ts"
import { root } from "../../../test/support/exec.ts"

type WebHandler = (request: Request) => Promise<Response>

const TOKEN = "tok-alice"
const page = "examples/server/chat-page"

/** The page's HTML with the bearer token in its `<meta name="condukt-token">`, as a program serving it would. */
const html = fs.readFileSync(path.join(root, page, "index.html"), "utf8")
  .replace('<meta name="condukt-token" content="">', `<meta name="condukt-token" content="${TOKEN}">`)

const toRequest = (req: http.IncomingMessage, origin: string): Request => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one)
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD"
  return new Request(new URL(req.url ?? "/", origin), {
    method: req.method ?? "GET",
    headers,
    ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: "half" } : {})
  })
}

const respond = async (response: Response, res: http.ServerResponse): Promise<void> => {
  res.writeHead(response.status, Object.fromEntries(response.headers))
  if (response.body === null) {
    res.end()
    return
  }
  // Chunk by chunk as the handler produces them: the page must see the stream, not its end.
  for await (const chunk of response.body) res.write(chunk)
  res.end()
}

/**
 * The page (`/`, `/app.js`) and, for every other path, `handler`, on 127.0.0.1: a program mounting
 * the server's web handler in its own node:http server. Closed with the scope.
 */
const serve = (app: string, handler: WebHandler): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ readonly server: http.Server; readonly url: string }>((resume) => {
      const server = http.createServer((req, res) => {
        if (req.method === "GET" && req.url === "/") {
          res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html)
        } else if (req.method === "GET" && req.url === "/app.js") {
          res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(app)
        } else {
          const origin = `http://${req.headers.host ?? "127.0.0.1"}`
          handler(toRequest(req, origin)).then((response) => respond(response, res)).catch((cause: unknown) => {
            res.destroy(cause instanceof Error ? cause : new Error(String(cause)))
          })
        }
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ server, url: `http://127.0.0.1:${port}/` }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ url }) => url))

/** What the page shows: each message's role and parts, read from the DOM by their `data-testid`s. */
const Transcript = Schema.Array(Schema.Struct({
  role: Schema.String,
  parts: Schema.Array(Schema.Record(Schema.String, Schema.NullOr(Schema.String)))
}))

const readTranscript = `[...document.querySelectorAll('[data-testid="message"]')].map((message) => ({
  role: message.dataset.role,
  parts: [...message.children].map((part) => {
    const field = (id) => part.querySelector('[data-testid="' + id + '"]')?.textContent ?? null
    return part.dataset.testid === "tool"
      ? { tool: part.dataset.tool, state: part.dataset.state, input: field("tool-input"), output: field("tool-output"), error: field("tool-error") }
      : { [part.dataset.testid]: part.textContent }
  })
}))`

const transcript = (tab: Page) =>
  Effect.promise(() => tab.evaluate(readTranscript)).pipe(Effect.flatMap(Schema.decodeUnknownEffect(Transcript)), Effect.orDie)

/** Waits until the page's chat status (`useChat`'s `status`) reads `status`. */
const statusIs = (tab: Page, status: string) =>
  Effect.promise(() => tab.getByTestId("status").filter({ hasText: new RegExp(`^${status}$`) }).waitFor())

const pretty = (value: unknown) => JSON.stringify(value, null, 2)

const axe = fs.readFileSync(path.join(root, "node_modules/axe-core/axe.min.js"), "utf8")

/** The rules axe-core finds the page breaking (ids), in the state it is in. */
const accessibilityViolations = (tab: Page) =>
  Effect.promise(async () => {
    await tab.addScriptTag({ content: axe })
    return tab.evaluate("axe.run().then((result) => result.violations.map((violation) => violation.id))")
  }).pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(Schema.String))), Effect.orDie)

describe("the useChat page in a headless Chromium", () => {
  it.live("a person sends a message, sees the answer and a call waiting, approves it, and sees the run finish", () =>
    Effect.gen(function*() {
      const responder = handWritten()
      const url = yield* serve(yield* bundle(`${page}/Chat.tsx`), responder.handler)
      const browser = yield* launchBrowser
      const tab = yield* Effect.promise(() => browser.newPage())
      tab.setDefaultTimeout(15_000)
      yield* Effect.promise(() => tab.goto(url))

      yield* Effect.promise(() => tab.getByLabel("Message", { exact: true }).fill("Clean up the build"))
      yield* Effect.promise(() => tab.getByRole("button", { name: "Send" }).click())
      yield* Effect.promise(() => tab.getByRole("button", { name: "Approve" }).waitFor())
      yield* statusIs(tab, "ready")
      assert.deepStrictEqual(yield* transcript(tab), [
        { role: "user", parts: [{ text: "Clean up the build" }] },
        {
          role: "assistant",
          parts: [
            { text: "I'll look at the build first." },
            { tool: "Bash", state: "approval-requested", input: pretty({ command: "rm -rf build" }), output: null, error: null }
          ]
        }
      ])
      assert.deepStrictEqual(yield* accessibilityViolations(tab), [])

      yield* Effect.promise(() => tab.getByRole("button", { name: "Approve" }).click())
      yield* Effect.promise(() => tab.getByText("The build is clean.").waitFor())
      yield* statusIs(tab, "ready")
      assert.deepStrictEqual(yield* transcript(tab), [
        { role: "user", parts: [{ text: "Clean up the build" }] },
        {
          role: "assistant",
          parts: [
            { text: "I'll look at the build first." },
            { tool: "Bash", state: "output-available", input: pretty({ command: "rm -rf build" }), output: "removed build/", error: null },
            { text: "The build is clean." }
          ]
        }
      ])
      assert.deepStrictEqual(responder.seen, [
        { trigger: "submit-message", last: { role: "user", parts: [{ type: "text", text: "Clean up the build" }] } },
        { trigger: "submit-message", approval: { id: "ap-1", approved: true } }
      ])
    }))
})

/**
 * A tiny hand-written UI message stream responder for `POST /chat`: the first request gets a text
 * and a Bash call asking for approval, the one that carries the answer gets the call's output and
 * a final text. It records what each request said.
 */
const handWritten = () => {
  const seen: Array<unknown> = []
  const stream = (chunks: ReadonlyArray<object>) =>
    new Response(chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("") + "data: [DONE]\n\n", {
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-vercel-ai-ui-message-stream": "v1" }
    })
  const handler: WebHandler = async (request) => {
    if (request.method !== "POST" || new URL(request.url).pathname !== "/chat") return new Response(null, { status: 404 })
    if (request.headers.get("authorization") !== `Bearer ${TOKEN}`) return new Response(null, { status: 401 })
    const body = await request.json() as {
      readonly trigger: string
      readonly messages: ReadonlyArray<{ readonly role: string; readonly parts: ReadonlyArray<Record<string, unknown>> }>
    }
    const last = body.messages[body.messages.length - 1]!
    const answered = last.role === "assistant"
      ? last.parts.find((part) => part.type === "tool-Bash" && part.state === "approval-responded")
      : undefined
    if (answered === undefined) {
      seen.push({ trigger: body.trigger, last: { role: last.role, parts: last.parts } })
      return stream([
        { type: "start", messageId: "m-1" },
        { type: "start-step" },
        { type: "text-start", id: "t-1" },
        { type: "text-delta", id: "t-1", delta: "I'll look at " },
        { type: "text-delta", id: "t-1", delta: "the build first." },
        { type: "text-end", id: "t-1" },
        { type: "tool-input-start", toolCallId: "call-1", toolName: "Bash" },
        { type: "tool-input-available", toolCallId: "call-1", toolName: "Bash", input: { command: "rm -rf build" } },
        { type: "tool-approval-request", approvalId: "ap-1", toolCallId: "call-1" },
        { type: "finish-step" },
        { type: "finish", finishReason: "tool-calls" }
      ])
    }
    seen.push({ trigger: body.trigger, approval: answered.approval })
    return stream([
      { type: "start", messageId: "m-1" },
      { type: "start-step" },
      { type: "tool-output-available", toolCallId: "call-1", output: "removed build/" },
      { type: "finish-step" },
      { type: "start-step" },
      { type: "text-start", id: "t-2" },
      { type: "text-delta", id: "t-2", delta: "The build is clean." },
      { type: "text-end", id: "t-2" },
      { type: "finish-step" },
      { type: "finish", finishReason: "stop" }
    ])
  }
  return { handler, seen }
}
