/**
 * The chat page of examples/server/chat-page in a real headless Chromium: `@ai-sdk/react`'s
 * `useChat` with `DefaultChatTransport`, bundled by esbuild, served by the example's own page.ts
 * from one node:http server on loopback that hands every path but the page's to the server's web
 * handler (a program mounting `Server.handler` in its own server). A scripted agent runs Bash in
 * a virtual sandbox (no host shell), every call asking first. A person types a message, sees the
 * streamed answer and the call waiting, approves (or denies) it from the page, and sees the run finish.
 */
import { TestModel } from "@condukt/testing"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Agent from "@condukt/core/Agent"
import { Bash } from "@condukt/core/tools/Bash"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Page } from "playwright-core"
import { bundle, launchBrowser } from "../../../test/support/browser.ts"
import { root } from "../../../test/support/exec.ts"
import { serve } from "../../../examples/server/chat-page/page.ts"
import { Auth, Server } from "../src/index.ts"

const TOKEN = "tok-alice"
const page = "examples/server/chat-page"

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

const janitor = Agent.make({
  name: "janitor",
  model: "test:scripted",
  tools: [Bash],
  sandbox: VirtualSandbox.layer(),
  approvals: { ask: ["Bash"] }
})

const command = "mkdir -p build && rm -r build && echo removed build/"

/** The model: a thought and a sentence with a Bash call, then, once the call has its result, `final`. */
const script = (final: string) => [
  TestModel.reply(
    TestModel.thinking("The build directory goes first."),
    TestModel.text("I'll clean the build."),
    TestModel.toolCall("Bash", { command }, "call-bash")
  ),
  TestModel.text(final)
]

/** The page, served with the server's handler for `janitor`, open in a fresh headless Chromium. */
const openPage = Effect.gen(function*() {
  const handler = yield* Server.handler(Server.layer({ agents: { janitor }, auth: Auth.bearer({ [TOKEN]: "alice" }), defaultAgent: "janitor" }))
  const url = yield* Effect.orDie(serve({ handler, app: yield* bundle(`${page}/Chat.tsx`), token: TOKEN }))
  const browser = yield* launchBrowser
  const tab = yield* Effect.promise(() => browser.newPage())
  // Below vitest's own timeout, so a page that never gets there fails naming what it waited for.
  tab.setDefaultTimeout(15_000)
  yield* Effect.promise(() => tab.goto(url))
  return { tab, handler }
})

/**
 * What the model read as each tool call's result, from the session's history (`GET
 * /sessions/{id}/history`): the chat's id, which the page shows, is the session's.
 */
const toolResults = (tab: Page, handler: Server.Handler) =>
  Effect.gen(function*() {
    const id = yield* Effect.promise(() => tab.getByTestId("chat").getAttribute("data-chat-id"))
    const response = yield* Effect.promise(() =>
      handler(new Request(`http://127.0.0.1/sessions/${encodeURIComponent(id ?? "")}/history`, { headers: { authorization: `Bearer ${TOKEN}` } }))
    )
    const history = yield* Effect.promise(() => response.json()).pipe(Effect.flatMap(Schema.decodeUnknownEffect(History)), Effect.orDie)
    return history.flatMap((message) => message._tag === "ToolResultMessage" ? [message.content] : [])
  })

/** The history's messages as far as `toolResults` reads them. */
const History = Schema.Array(Schema.Struct({ _tag: Schema.String, content: Schema.optional(Schema.Unknown) }))

/** Types `text` into the labelled input and presses Send, as a person would. */
const send = (tab: Page, text: string) =>
  Effect.promise(async () => {
    await tab.getByLabel("Message", { exact: true }).fill(text)
    await tab.getByRole("button", { name: "Send" }).click()
  })

/** What the page shows once the call asks: the prompt, then the thought, the sentence and the waiting call. */
const waiting = [
  { role: "user", parts: [{ text: "Clean up the build" }] },
  {
    role: "assistant",
    parts: [
      { reasoning: "The build directory goes first." },
      { text: "I'll clean the build." },
      { tool: "Bash", state: "approval-requested", input: pretty({ command }), output: null, error: null }
    ]
  }
]

describe("the useChat page in a headless Chromium", () => {
  it.live("a person sends a message, sees the streamed answer and the call waiting, approves it, and sees the run finish", () =>
    Effect.gen(function*() {
      const { handler, tab } = yield* openPage
      yield* send(tab, "Clean up the build")
      yield* Effect.promise(() => tab.getByRole("button", { name: "Approve" }).waitFor())
      yield* statusIs(tab, "ready")
      assert.deepStrictEqual(yield* transcript(tab), waiting)
      assert.deepStrictEqual(yield* accessibilityViolations(tab), [])

      yield* Effect.promise(() => tab.getByRole("button", { name: "Approve" }).click())
      yield* Effect.promise(() => tab.getByText("The build is clean.").waitFor())
      yield* statusIs(tab, "ready")
      assert.deepStrictEqual(yield* transcript(tab), [
        waiting[0],
        {
          role: "assistant",
          parts: [
            { reasoning: "The build directory goes first." },
            { text: "I'll clean the build." },
            { tool: "Bash", state: "output-available", input: pretty({ command }), output: "removed build/\n", error: null },
            { text: "The build is clean." }
          ]
        }
      ])
      assert.deepStrictEqual(yield* toolResults(tab, handler), ["removed build/\n"])
    }).pipe(Effect.provide(TestModel.layer(script("The build is clean.")))))

  it.live("a person denies the call from the page: it never runs, and the run goes on to its end", () =>
    Effect.gen(function*() {
      const { handler, tab } = yield* openPage
      yield* send(tab, "Clean up the build")
      yield* Effect.promise(() => tab.getByRole("button", { name: "Deny" }).click())
      yield* Effect.promise(() => tab.getByText("I left the build alone.").waitFor())
      yield* statusIs(tab, "ready")
      assert.deepStrictEqual(yield* transcript(tab), [
        waiting[0],
        {
          role: "assistant",
          parts: [
            { reasoning: "The build directory goes first." },
            { text: "I'll clean the build." },
            { tool: "Bash", state: "output-denied", input: pretty({ command }), output: null, error: null },
            { text: "I left the build alone." }
          ]
        }
      ])
      assert.deepStrictEqual(yield* toolResults(tab, handler), ["Denied by the user"])
    }).pipe(Effect.provide(TestModel.layer(script("I left the build alone.")))))
})
