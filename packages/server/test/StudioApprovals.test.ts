/**
 * The Studio's approvals inbox and audit in a real headless Chromium, against a real server on
 * loopback: a scripted agent runs Bash in a virtual sandbox, every call asking first. A person
 * sees the waiting call (its input, the rule that asked, the time left), gives a reason and
 * approves or denies it from the page; the run finishes (read back through the API), and the
 * audit names who answered and why. Two principals each see only their own requests.
 */
import { TestModel } from "@condukt/testing"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import * as Agent from "@condukt/core/Agent"
import { Bash } from "@condukt/core/tools/Bash"
import type { Page } from "playwright-core"
import { axeViolations, screenshot, start, type StudioServer } from "./fixtures/studio.ts"

const ALICE = "tok-alice"
const BOB = "tok-bob"
const tokens = { [ALICE]: "alice", [BOB]: "bob" }

const janitor = Agent.make({
  name: "janitor",
  model: "test:scripted",
  tools: [Bash],
  sandbox: VirtualSandbox.layer(),
  approvals: { ask: ["Bash"] }
})

/** The same, its requests expiring an hour after they are asked. */
const hurried = Agent.make({ ...janitor, approvals: { ask: ["Bash"], expires: "1 hour" } })

const commandOf = (dir: string) => `mkdir -p ${dir} && rm -r ${dir} && echo removed ${dir}/`

/** A command far longer than the inbox shows (the server keeps up to 64 KiB of a call's input). */
const LONG = `echo ${"x".repeat(10_000)}`

/** An approval record as the API answers it, as far as the tests read it. */
const Record = Schema.Struct({
  id: Schema.String,
  sessionId: Schema.String,
  agent: Schema.String,
  tool: Schema.String,
  input: Schema.Unknown,
  rule: Schema.String,
  requestedAt: Schema.Number,
  expiresAt: Schema.optional(Schema.Number),
  outcome: Schema.optional(Schema.String),
  by: Schema.optional(Schema.String),
  reason: Schema.optional(Schema.String)
})
const Records = Schema.Struct({ records: Schema.Array(Record) })

/** The API's records of `status` for `token`'s principal. */
const records = (studio: StudioServer, token: string, status: "open" | "answered") =>
  studio.request(token, "GET", `/approvals?status=${status}`).pipe(
    Effect.flatMap(({ body }) => Schema.decodeUnknownEffect(Records)(body)),
    Effect.map((page) => page.records),
    Effect.orDie
  )

/** The API's open records for `token` once there are `count` of them. */
const waitingRecords = (studio: StudioServer, token: string, count: number) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 400; attempt++) {
      const open = yield* records(studio, token, "open")
      if (open.length >= count) return open
      yield* Effect.sleep(25)
    }
    return yield* Effect.die(new Error(`${token} never had ${count} open approvals`))
  })

/** A session of `janitor` for `token`, and its run of `prompt` going (it asks before its Bash call). */
const startRun = (studio: StudioServer, token: string, id: string) =>
  Effect.gen(function*() {
    const created = yield* studio.request(token, "POST", "/sessions", { id, agent: "janitor" })
    assert.strictEqual(created.status, 201)
    return yield* Effect.forkChild(studio.request(token, "POST", `/sessions/${id}/runs`, { prompt: "Clean up the build" }))
  })

/** What the tool's calls gave the model, from the session's history. */
const toolResults = (studio: StudioServer, token: string, id: string) =>
  studio.request(token, "GET", `/sessions/${id}/history`).pipe(
    Effect.flatMap(({ body }) => Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ _tag: Schema.String, content: Schema.optional(Schema.Unknown) })))(body)),
    Effect.map((history) => history.flatMap((message) => message._tag === "ToolResultMessage" ? [message.content] : [])),
    Effect.orDie
  )

/** A request of the inbox as the page shows it. */
const InboxRow = Schema.Struct({
  tool: Schema.String,
  session: Schema.String,
  sessionLink: Schema.String,
  agent: Schema.String,
  rule: Schema.String,
  input: Schema.String,
  expiresAt: Schema.NullOr(Schema.String),
  timeLeft: Schema.String
})

/** A row of the audit as the page shows it. */
const AuditRow = Schema.Struct({
  outcome: Schema.String,
  tool: Schema.String,
  session: Schema.String,
  agent: Schema.String,
  by: Schema.String,
  reason: Schema.String
})

/** The inbox's requests as the page shows them, read from the DOM by their `data-testid`s. */
const inbox = (tab: Page) =>
  Effect.promise(() =>
    tab.evaluate(`[...document.querySelectorAll('[data-testid="approval"]')].map((card) => {
      const field = (id) => card.querySelector('[data-testid="' + id + '"]')
      return {
        tool: field("approval-tool").textContent,
        session: field("approval-session").textContent,
        sessionLink: field("approval-session").getAttribute("href"),
        agent: field("approval-agent").textContent,
        rule: field("approval-rule").textContent,
        input: field("approval-input").textContent,
        expiresAt: field("approval-time-left").dataset.expiresAt ?? null,
        timeLeft: field("approval-time-left").textContent
      }
    })`)
  ).pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(InboxRow))), Effect.orDie)

/** The audit's rows as the page shows them. */
const audit = (tab: Page) =>
  Effect.promise(() =>
    tab.evaluate(`[...document.querySelectorAll('[data-testid="audit-row"]')].map((row) => {
      const field = (id) => row.querySelector('[data-testid="' + id + '"]').textContent
      return { outcome: field("audit-outcome"), tool: field("audit-tool"), session: field("audit-session"), agent: field("audit-agent"), by: field("audit-by"), reason: field("audit-reason") }
    })`)
  ).pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(AuditRow))), Effect.orDie)

/** The card of `session`'s request: types the reason into its field and presses the button, by keyboard. */
const answer = (tab: Page, session: string, reason: string, button: "Approve" | "Deny") =>
  Effect.promise(async () => {
    const card = tab.getByTestId("approval").filter({ has: tab.getByTestId("approval-session").filter({ hasText: session }) })
    await card.getByLabel("Reason (optional)").focus()
    await tab.keyboard.type(reason)
    await card.getByRole("button", { name: button }).focus()
    await tab.keyboard.press("Enter")
  })

const pretty = (value: unknown) => JSON.stringify(value, null, 2)

describe("the Studio's approvals", () => {
  it.live("a person sees the waiting Bash call with its input, the rule and the time left, approves it with a reason, the run finishes, the audit names who and why, and the session's timeline shows every turn and the answered call", () =>
    Effect.gen(function*() {
      const studio = yield* start({ agents: { janitor: hurried }, tokens })
      const run = yield* startRun(studio, ALICE, "clean-1")
      const [record] = yield* waitingRecords(studio, ALICE, 1)

      const tab = yield* studio.open({ token: ALICE, hash: "/approvals" })
      // The page's clock held 90 s before the deadline: the time left reads the same at every tick.
      const expiresAt = record!.expiresAt!
      yield* Effect.promise(() => tab.clock.setFixedTime(expiresAt - 90_000))
      yield* Effect.promise(() => tab.getByTestId("approval-time-left").filter({ hasText: "1 min 30 s left" }).waitFor())
      assert.deepStrictEqual(yield* inbox(tab), [{
        tool: "Bash",
        session: "clean-1",
        sessionLink: "#/sessions/clean-1",
        agent: "janitor",
        rule: record!.rule,
        input: pretty({ command: commandOf("build") }),
        expiresAt: String(expiresAt),
        timeLeft: "1 min 30 s left"
      }])
      assert.strictEqual(expiresAt - record!.requestedAt, 3_600_000)
      assert.deepStrictEqual(yield* axeViolations(tab), { light: [], dark: [] })
      yield* screenshot(tab, "approvals")

      yield* answer(tab, "clean-1", "Only the build directory.", "Approve")
      yield* Effect.promise(() => tab.getByTestId("approvals-empty").waitFor())
      const finished = yield* Fiber.join(run)
      assert.deepStrictEqual([finished.status, (finished.body as { outcome: string }).outcome], [200, "completed"])
      assert.deepStrictEqual(yield* toolResults(studio, ALICE, "clean-1"), ["removed build/\n"])

      yield* Effect.promise(() => tab.getByTestId("approvals-tab-audit").click())
      yield* Effect.promise(() => tab.getByTestId("audit-row").waitFor())
      assert.deepStrictEqual(yield* audit(tab), [
        { outcome: "approved", tool: "Bash", session: "clean-1", agent: "janitor", by: "alice", reason: "Only the build directory." }
      ])
      const answered = yield* records(studio, ALICE, "answered")
      assert.deepStrictEqual(answered.map((r) => ({ id: r.id, outcome: r.outcome, by: r.by, reason: r.reason })), [
        { id: record!.id, outcome: "approved", by: "alice", reason: "Only the build directory." }
      ])
      assert.deepStrictEqual(yield* axeViolations(tab), { light: [], dark: [] })
      yield* screenshot(tab, "audit")

      // The session's timeline, from the audit: both turns, the call with its result and its answer.
      yield* Effect.promise(() => tab.getByTestId("audit-session").click())
      yield* Effect.promise(() => tab.getByTestId("run-outcome").filter({ hasText: "completed" }).waitFor())
      // The answers are read apart from the events: on a loaded machine they come after the outcome.
      yield* Effect.promise(() => tab.getByTestId("approval-outcome").filter({ hasText: "approved" }).waitFor())
      assert.deepStrictEqual(yield* Effect.promise(() => tab.evaluate(`[...document.querySelectorAll('[data-testid="turn"]')].map((turn) => ({
        turn: turn.dataset.turn,
        text: turn.querySelector('[data-testid="turn-text"]')?.textContent ?? null,
        calls: [...turn.querySelectorAll('[data-testid="call"]')].map((call) => ({
          tool: call.dataset.tool,
          state: call.dataset.state,
          result: call.querySelector('[data-testid="call-result"]')?.textContent ?? null,
          answer: call.querySelector('[data-testid="approval-outcome"]')?.textContent ?? null
        }))
      }))`)), [
        { turn: "1", text: null, calls: [{ tool: "Bash", state: "ok", result: "removed build/\n", answer: "approved by alice: Only the build directory." }] },
        { turn: "2", text: "The build is clean.", calls: [] }
      ])
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.toolCall("Bash", { command: commandOf("build") }, "call-bash"),
      TestModel.text("The build is clean.")
    ]))))

  it.live("each principal sees only their own requests; one denies with a reason, the call never runs, and only that principal's audit shows it", () =>
    Effect.gen(function*() {
      const studio = yield* start({ agents: { janitor }, tokens })
      // One after the other, so the script's replies go to the sessions in order.
      const aliceRun = yield* startRun(studio, ALICE, "alice-1")
      yield* waitingRecords(studio, ALICE, 1)
      const bobRun = yield* startRun(studio, BOB, "bob-1")
      yield* waitingRecords(studio, BOB, 1)

      const aliceTab = yield* studio.open({ token: ALICE, hash: "/approvals" })
      const bobTab = yield* studio.open({ token: BOB, hash: "/approvals" })
      yield* Effect.promise(() => aliceTab.getByTestId("approval").waitFor())
      yield* Effect.promise(() => bobTab.getByTestId("approval").waitFor())
      const waitingOf = (session: string, dir: string) => ({
        tool: "Bash",
        session,
        sessionLink: `#/sessions/${session}`,
        agent: "janitor",
        rule: "ask: Bash",
        input: pretty({ command: commandOf(dir) }),
        expiresAt: null,
        timeLeft: "no expiry"
      })
      assert.deepStrictEqual(yield* inbox(aliceTab), [waitingOf("alice-1", "alice")])
      assert.deepStrictEqual(yield* inbox(bobTab), [waitingOf("bob-1", "bob")])

      yield* answer(bobTab, "bob-1", "Not on a Friday.", "Deny")
      yield* Effect.promise(() => bobTab.getByTestId("approvals-empty").waitFor())
      const bobFinished = yield* Fiber.join(bobRun)
      assert.deepStrictEqual([bobFinished.status, (bobFinished.body as { outcome: string }).outcome], [200, "completed"])
      assert.deepStrictEqual(yield* toolResults(studio, BOB, "bob-1"), ["Denied by the user: Not on a Friday."])

      yield* Effect.promise(() => bobTab.getByTestId("approvals-tab-audit").click())
      yield* Effect.promise(() => bobTab.getByTestId("audit-row").waitFor())
      assert.deepStrictEqual(yield* audit(bobTab), [
        { outcome: "denied", tool: "Bash", session: "bob-1", agent: "janitor", by: "bob", reason: "Not on a Friday." }
      ])
      yield* Effect.promise(() => aliceTab.getByTestId("approvals-tab-audit").click())
      yield* Effect.promise(() => aliceTab.getByTestId("audit-empty").waitFor())
      assert.deepStrictEqual(yield* audit(aliceTab), [])
      // Alice's request is still hers to answer.
      assert.deepStrictEqual((yield* records(studio, ALICE, "open")).map((r) => r.sessionId), ["alice-1"])
      yield* Fiber.interrupt(aliceRun)
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.toolCall("Bash", { command: commandOf("alice") }, "call-alice"),
      TestModel.toolCall("Bash", { command: commandOf("bob") }, "call-bob"),
      TestModel.text("I left the build alone.")
    ]))))

  it.live("the inbox lists the waiting calls oldest first (the API newest first when asked), a long input cut saying how much was left out, filters by tool, and drops a request answered elsewhere", () =>
    Effect.gen(function*() {
      const studio = yield* start({ agents: { janitor }, tokens })
      const first = yield* startRun(studio, ALICE, "first")
      yield* waitingRecords(studio, ALICE, 1)
      const second = yield* startRun(studio, ALICE, "second")
      const open = yield* waitingRecords(studio, ALICE, 2)

      const tab = yield* studio.open({ token: ALICE, hash: "/approvals" })
      yield* Effect.promise(() => tab.getByTestId("approval").nth(1).waitFor())
      const shown = yield* inbox(tab)
      const oldestFirst = [...open].sort((a, b) => a.requestedAt - b.requestedAt)
      assert.deepStrictEqual(shown.map((row) => row.session), oldestFirst.map((record) => record.sessionId))
      assert.deepStrictEqual(shown.map((row) => row.session), ["first", "second"])
      // The API in the other order (the audit's), a page of one and its cursor; a bad order a 400.
      const newest = yield* studio.request(ALICE, "GET", "/approvals?order=newest&limit=1")
      const nextOf = (body: unknown) => (body as { next: string }).next
      const sessionsOf = (body: unknown) => (body as { records: ReadonlyArray<{ sessionId: string }> }).records.map((record) => record.sessionId)
      assert.deepStrictEqual([newest.status, sessionsOf(newest.body)], [200, ["second"]])
      const older = yield* studio.request(ALICE, "GET", `/approvals?order=newest&limit=1&cursor=${nextOf(newest.body)}`)
      assert.deepStrictEqual([older.status, sessionsOf(older.body)], [200, ["first"]])
      assert.strictEqual((yield* studio.request(ALICE, "GET", "/approvals?order=sideways")).status, 400)
      // The page shows 4,000 characters of the input's JSON and says how many it left out.
      const whole = pretty({ command: LONG })
      assert.deepStrictEqual(shown[1]!.input, `${whole.slice(0, 4000)}\n… (${(whole.length - 4000).toLocaleString("en-US")} more characters)`)

      // Filtered by tool: none of Read waits; cleared, both are back.
      yield* Effect.promise(() => tab.getByLabel("Tool").fill("Read"))
      assert.strictEqual(yield* Effect.promise(() => tab.getByTestId("approvals-empty").textContent()), "No Read call is waiting for an answer.")
      yield* Effect.promise(() => tab.getByLabel("Tool").fill(""))
      yield* Effect.promise(() => tab.getByTestId("approval").nth(1).waitFor())
      assert.deepStrictEqual((yield* inbox(tab)).map((row) => row.session), ["first", "second"])

      // Answered through the API (another tab, another person): the inbox drops it at its next refresh.
      const answered = yield* studio.request(ALICE, "POST", `/approvals/${oldestFirst[0]!.id}`, { approved: false, reason: "Elsewhere." })
      assert.strictEqual(answered.status, 200)
      yield* Effect.promise(() => tab.getByTestId("approval").filter({ hasText: "first" }).waitFor({ state: "detached" }))
      assert.deepStrictEqual((yield* inbox(tab)).map((row) => row.session), ["second"])
      yield* Fiber.join(first)
      yield* Fiber.interrupt(second)
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.toolCall("Bash", { command: commandOf("first") }, "call-first"),
      TestModel.toolCall("Bash", { command: LONG }, "call-long"),
      TestModel.text("Left alone.")
    ]))))
})
