/**
 * The Studio's timeline (`#/sessions/<id>`) in a real headless Chromium over a real server: a
 * scripted agent whose turn calls a researcher sub-agent and Bash (which asks for an approval) —
 * the timeline shows every turn and call, the sub-agent's run inside its call, inputs and results,
 * the approval and its answer, a later run's error (started from the page's prompt box); it
 * follows the run live (the events counted as they arrive), a reload mid-run shows the same
 * timeline, nothing doubled, and a dropped connection is resumed with `Last-Event-ID`. Accessible
 * in light and dark. A secret printed by a tool is nowhere on the page nor in any response it was
 * sent. The reducer and the events reader alone: StudioTimelineEvents.test.ts.
 */
import { TestModel } from "@condukt/testing"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as Model from "@condukt/core/Model"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Secret from "@condukt/core/Secret"
import { Bash } from "@condukt/core/tools/Bash"
import type { Page } from "playwright-core"
import * as Studio from "./fixtures/studio.ts"

const TOKEN = "tok-alice"

const researcher = Agent.make({ name: "researcher", model: "child:x", system: "You research." })
const main = Agent.make({
  name: "main",
  model: "parent:x",
  tools: [Agent.asTool(researcher, { description: "Researches a question" }), Bash],
  sandbox: VirtualSandbox.layer(),
  approvals: { ask: ["Bash"] }
})

/** Each agent its own scripted model: main asks the researcher and runs Bash, answers, and fails on its next run. */
const models = Layer.unwrap(Effect.gen(function*() {
  const parent = yield* TestModel.make([
    TestModel.reply(
      TestModel.thinking("The researcher knows."),
      TestModel.text("Asking the researcher, then looking."),
      TestModel.toolCall("researcher", { prompt: "Where is the bug?" }, "call-research"),
      TestModel.toolCall("Bash", { command: "echo checked" }, "call-bash")
    ),
    TestModel.text("The bug is in the build script."),
    TestModel.error("the provider is down")
  ], { name: "parent:x" })
  const child = yield* TestModel.make([TestModel.text("In the build script.")], { name: "child:x" })
  return Layer.mergeAll(
    Model.layerProviders({ parent: () => Effect.succeed(parent.model), child: () => Effect.succeed(child.model) }),
    Sandbox.layerNoop()
  )
}))

/** What the timeline shows, read from the DOM by `data-testid`: runs, their turns, calls and sub-agents, nested as drawn. */
const Shown: Schema.Codec<ReadonlyArray<ShownRun>> = Schema.Array(Schema.suspend(() => ShownRun))
interface ShownRun {
  readonly agent: string
  readonly outcome: string
  readonly prompt: string | null
  readonly errors: ReadonlyArray<string>
  readonly turns: ReadonlyArray<{
    readonly turn: string
    readonly text: string | null
    readonly thinking: string | null
    readonly tokens: string | null
    readonly calls: ReadonlyArray<{
      readonly id: string
      readonly tool: string
      readonly state: string
      readonly input: string | null
      readonly result: string | null
      readonly approval: string | null
      readonly agents: ReadonlyArray<ShownRun>
    }>
  }>
}
const ShownRun: Schema.Codec<ShownRun> = Schema.Struct({
  agent: Schema.String,
  outcome: Schema.String,
  prompt: Schema.NullOr(Schema.String),
  errors: Schema.Array(Schema.String),
  turns: Schema.Array(Schema.Struct({
    turn: Schema.String,
    text: Schema.NullOr(Schema.String),
    thinking: Schema.NullOr(Schema.String),
    tokens: Schema.NullOr(Schema.String),
    calls: Schema.Array(Schema.Struct({
      id: Schema.String,
      tool: Schema.String,
      state: Schema.String,
      input: Schema.NullOr(Schema.String),
      result: Schema.NullOr(Schema.String),
      approval: Schema.NullOr(Schema.String),
      agents: Schema.Array(Schema.suspend(() => ShownRun))
    }))
  }))
})

const readTimeline = `(() => {
  const text = (el, selector) => el.querySelector(selector)?.textContent ?? null
  const run = (el) => ({
    agent: el.dataset.agent,
    outcome: el.dataset.outcome,
    prompt: text(el, ':scope > [data-testid="run-prompt"]'),
    errors: [...el.querySelectorAll(':scope > [data-testid="run-error"]')].map((e) => e.textContent),
    turns: [...el.querySelectorAll(':scope > ol > [data-testid="turn"]')].map((turn) => ({
      turn: turn.dataset.turn,
      text: text(turn, ':scope > [data-testid="turn-text"]'),
      thinking: text(turn, ':scope > [data-testid="thinking"] > p'),
      tokens: text(turn, ':scope > div [data-testid="turn-tokens"]'),
      calls: [...turn.querySelectorAll(':scope > ul > [data-testid="call"]')].map((call) => ({
        id: call.dataset.callId,
        tool: call.dataset.tool,
        state: call.dataset.state,
        input: text(call, ':scope > details > [data-testid="call-input"]'),
        result: text(call, ':scope > div > [data-testid="call-result"]'),
        approval: text(call, ':scope > [data-testid="approval"]'),
        agents: [...call.querySelectorAll(':scope > [data-testid="sub-agents"] > [data-testid="run"]')].map(run)
      }))
    }))
  })
  return [...document.querySelectorAll('[data-testid="timeline"] > [data-testid="run"]')].map(run)
})()`

const shown = (tab: Page) => Effect.promise(() => tab.evaluate(readTimeline)).pipe(Effect.flatMap(Schema.decodeUnknownEffect(Shown)), Effect.orDie)

/** How many events the page has taken (the timeline's `data-events`). */
const eventsShown = (tab: Page) => Effect.promise(() => tab.getByTestId("timeline").getAttribute("data-events")).pipe(Effect.map(Number))

/** Waits until the page has taken `count` events. */
const untilShown = (tab: Page, count: number) =>
  Effect.promise(() => tab.locator(`[data-testid="timeline"][data-events="${count}"]`).waitFor())

/** From now on, every event count the page shows, in order (a MutationObserver's record). */
const countArrivals = `(() => {
  window.__counts = []
  const note = () => {
    const value = document.querySelector('[data-testid="timeline"]')?.dataset.events
    if (value !== undefined && window.__counts.at(-1) !== Number(value)) window.__counts.push(Number(value))
  }
  note()
  new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true })
})()`

const pretty = (value: unknown) => JSON.stringify(value, null, 2)

/** The first run as shown once Bash waits and the researcher has answered (its result published: it does not wait). */
const waiting: ShownRun = {
  agent: "",
  outcome: "running",
  prompt: "Prompt: Find the bug",
  errors: [],
  turns: [{
    turn: "1",
    text: "Asking the researcher, then looking.",
    thinking: "The researcher knows.",
    tokens: " · 10 in, 5 out",
    calls: [
      {
        id: "call-research",
        tool: "researcher",
        state: "ok",
        input: pretty({ prompt: "Where is the bug?" }),
        result: "In the build script.",
        approval: null,
        agents: [{
          agent: "main/researcher",
          outcome: "completed",
          prompt: "Prompt: Where is the bug?",
          errors: [],
          turns: [{ turn: "1", text: "In the build script.", thinking: null, tokens: " · 10 in, 5 out", calls: [] }]
        }]
      },
      {
        id: "call-bash",
        tool: "Bash",
        state: "waiting",
        input: pretty({ command: "echo checked" }),
        result: null,
        approval: "Asked for an approval — waiting for an answer",
        agents: []
      }
    ]
  }]
}

/** The session's last event number, as the server says. */
const lastEventId = (studio: Studio.StudioServer, id: string) =>
  studio.request(TOKEN, "GET", `/sessions/${id}`).pipe(Effect.map(({ body }) => (body as { lastEventId: number }).lastEventId))

describe("the Studio's timeline in a headless Chromium", () => {
  it.live("shows every turn and call, the sub-agent inside its call, the approval and its answer, an error; live, and the same after a reload", () =>
    Effect.gen(function*() {
      const studio = yield* Studio.start({ agents: { main }, tokens: { [TOKEN]: "alice" } })
      const { body } = yield* studio.request(TOKEN, "POST", "/sessions", { agent: "main" })
      const id = (body as { id: string }).id
      const tab = yield* studio.open({ token: TOKEN, hash: `/sessions/${id}` })
      yield* Effect.promise(() => tab.getByTestId("timeline-empty").waitFor())

      const run = yield* studio.request(TOKEN, "POST", `/sessions/${id}/runs`, { prompt: "Find the bug" }).pipe(Effect.forkChild)
      yield* Effect.promise(() => tab.locator('[data-testid="call"][data-tool="Bash"][data-state="waiting"]').waitFor())
      yield* Effect.promise(() => tab.locator('[data-testid="call"][data-call-id="call-research"][data-state="ok"]').waitFor())
      // The run is paused on the answer: everything written so far is on the page, and only once.
      const paused = yield* lastEventId(studio, id)
      yield* untilShown(tab, paused)
      const before = yield* shown(tab)
      assert.deepStrictEqual(before, [waiting])

      yield* Effect.promise(() => tab.reload())
      yield* untilShown(tab, paused)
      assert.deepStrictEqual(yield* shown(tab), before)

      // Meanwhile the sessions table says the session waits (an approval of it is open).
      const list = yield* studio.open({ token: TOKEN, hash: "/sessions" })
      yield* Effect.promise(() => list.locator(`[data-testid="session-row"][data-id="${id}"]`).waitFor())
      assert.strictEqual(yield* Effect.promise(() => list.locator(`[data-testid="session-row"][data-id="${id}"] [data-testid="session-state"]`).textContent()), "waiting")

      yield* Effect.promise(() => tab.evaluate(countArrivals))
      // The connection drops while the run waits; the answer comes while the page is away.
      assert.strictEqual(yield* studio.dropStreams(), 1)
      yield* studio.request(TOKEN, "POST", `/sessions/${id}/approvals/call-bash`, { approved: true })
      assert.strictEqual(((yield* Fiber.join(run)).body as { outcome: string }).outcome, "completed")
      yield* Effect.promise(() => tab.locator('[data-testid="timeline"] > [data-testid="run"][data-outcome="completed"]').waitFor())
      const firstRun = yield* lastEventId(studio, id)
      yield* untilShown(tab, firstRun)

      // The next run from the page's prompt box, as a person starts one.
      yield* Effect.promise(async () => {
        await tab.getByLabel("Prompt").fill("Once more")
        await tab.getByRole("button", { name: "Run", exact: true }).click()
        await tab.locator('[data-testid="timeline"] > [data-testid="run"][data-outcome="failed"]').waitFor()
      })
      const total = yield* lastEventId(studio, id)
      yield* untilShown(tab, total)
      yield* Effect.promise(() => tab.getByText("approved by alice").waitFor())
      // The session's tokens, read again as each run ended: main's two turns (the sub-agent's are its own session's).
      yield* Effect.promise(() => tab.getByTestId("timeline-tokens").filter({ hasText: /^30 tokens/ }).waitFor())

      const [first, second] = yield* shown(tab)
      assert.deepStrictEqual(first, {
        ...waiting,
        outcome: "completed",
        turns: [
          {
            ...waiting.turns[0]!,
            calls: [
              waiting.turns[0]!.calls[0]!,
              { ...waiting.turns[0]!.calls[1]!, state: "ok", result: "checked\n", approval: "Asked for an approval — approved by alice" }
            ]
          },
          { turn: "2", text: "The bug is in the build script.", thinking: null, tokens: " · 10 in, 5 out", calls: [] }
        ]
      })
      assert.deepStrictEqual(second, { agent: "", outcome: "failed", prompt: "Prompt: Once more", errors: ["Error: the provider is down"], turns: [{ turn: "1", text: null, thinking: null, tokens: null, calls: [] }] })

      // Live: the page took the events as they came — the first run's end before the second run's.
      const counts = yield* Effect.promise(() => tab.evaluate("window.__counts")).pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(Schema.Number))), Effect.orDie)
      assert.deepStrictEqual(counts.filter((count) => count === paused || count === firstRun || count === total), [paused, firstRun, total])
      assert.deepStrictEqual([...counts].sort((a, b) => a - b), counts)
      assert.strictEqual(yield* eventsShown(tab), total)
      // Each page load read the stream from the start; after the drop, the page resumed where it was.
      assert.deepStrictEqual(
        studio.responses().filter((response) => response.url.startsWith(`/sessions/${id}/events`)).map((response) => response.lastEventId),
        [undefined, undefined, String(paused)]
      )

      yield* Studio.screenshot(tab, "timeline")
      assert.deepStrictEqual(yield* Studio.axeViolations(tab), { light: [], dark: [] })
    }).pipe(Effect.provide(models)), 60_000)
})

const SECRET = "tok-8f3a9c2e-very-secret"

/** An agent given a secret: its Bash call prints it, its reply quotes it. */
const deployer = Agent.make({
  name: "deployer",
  model: "test:scripted",
  tools: [Bash],
  sandbox: VirtualSandbox.layer(),
  secrets: { DEPLOY_TOKEN: Secret.static(SECRET) }
})

describe("the Studio and a session's secrets", () => {
  it.live("a secret a tool printed and the model quoted is nowhere on the page nor in anything the server sent it", () =>
    Effect.gen(function*() {
      const studio = yield* Studio.start({ agents: { deployer }, tokens: { [TOKEN]: "alice" } })
      const { body } = yield* studio.request(TOKEN, "POST", "/sessions", { agent: "deployer" })
      const id = (body as { id: string }).id
      const tab = yield* studio.open({ token: TOKEN, hash: `/sessions/${id}` })
      const run = yield* studio.request(TOKEN, "POST", `/sessions/${id}/runs`, { prompt: "Check the deploy token" })
      assert.strictEqual((run.body as { outcome: string }).outcome, "completed")
      yield* Effect.promise(() => tab.locator('[data-testid="timeline"] > [data-testid="run"][data-outcome="completed"]').waitFor())
      yield* untilShown(tab, yield* lastEventId(studio, id))

      const [shownRun] = yield* shown(tab)
      assert.deepStrictEqual(shownRun!.turns.map((turn) => [turn.text, turn.calls.map((call) => call.result)]), [
        [null, ["token [REDACTED:DEPLOY_TOKEN]\n"]],
        ["The token is [REDACTED:DEPLOY_TOKEN].", []]
      ])
      assert.strictEqual(yield* Effect.promise(() => tab.getByTestId("call-secrets").textContent()), "Secrets handed over: DEPLOY_TOKEN")
      yield* Effect.promise(() => tab.getByTestId("nav-sessions").click())
      yield* Effect.promise(() => tab.locator(`[data-testid="session-row"][data-id="${id}"]`).waitFor())

      const html = yield* Effect.promise(() => tab.evaluate("document.documentElement.outerHTML"))
      assert.isFalse(String(html).includes(SECRET))
      const responses = studio.responses()
      // The page's calls were recorded (the events stream among them), and none carries the value.
      assert.isTrue(responses.some((response) => response.url.startsWith(`/sessions/${id}/events`) && response.body.includes("[REDACTED:DEPLOY_TOKEN]")))
      assert.deepStrictEqual(responses.filter((response) => response.body.includes(SECRET)).map((response) => response.url), [])
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([TestModel.toolCall("Bash", { command: "echo token $DEPLOY_TOKEN" }), TestModel.text(`The token is ${SECRET}.`)]),
      Sandbox.layerNoop()
    ))), 60_000)
})
