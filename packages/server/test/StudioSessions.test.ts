/**
 * The Studio's sessions table in a real headless Chromium over a real server: 10,000 sessions
 * (seeded in the server's store: listed, never run) — the first page shows at once, only the rows
 * in view are in the DOM, scrolling to the end fetches page after page (`before`) down to the
 * oldest, the agent filter and the id search (server-side) narrow it; two principals each see
 * only their own sessions, new ones as they start, a row opened by keyboard; ids as hostile as the
 * server keeps (`../x`, markup, `#`, `?`, `%`) are shown as written and open their own timeline;
 * the sign-in refuses a token that names nobody; the theme toggle's choice outlives a reload; axe
 * finds nothing serious in light or dark.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as Sandbox from "@condukt/core/Sandbox"
import type { Page } from "playwright-core"
import * as Studio from "./fixtures/studio.ts"

const main = Agent.make({ name: "main", model: "test:scripted" })
const helper = Agent.make({ name: "helper", model: "test:scripted" })
const agents = { main, helper }

const PRICES = { main: { inputPerMillion: 3, outputPerMillion: 15 }, helper: { inputPerMillion: 0.8, outputPerMillion: 4 } }

const COUNT = 10_000
/** Session `i`'s id: `s-00000` the oldest, `s-09999` the newest; odd ones run `helper`. */
const idOf = (i: number) => `s-${String(i).padStart(5, "0")}`
const agentOf = (i: number) => i % 2 === 0 ? "main" : "helper"

/** The rows in the DOM now: id and agent, top to bottom. */
const rowsShown = (tab: Page) =>
  Effect.promise(() =>
    tab.getByTestId("session-row").evaluateAll((rows) =>
      rows.map((row) => ({ id: (row as HTMLElement).dataset.id, agent: row.querySelector('[data-testid="session-agent"]')?.textContent }))
    )
  ).pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ id: Schema.String, agent: Schema.String })))), Effect.orDie)

const table = (tab: Page) => tab.getByTestId("sessions-table")

/** Scrolls the table to its end until every page is loaded, as a person holding End would. */
const scrollToEnd = (tab: Page) =>
  Effect.promise(async () => {
    for (let pages = 0; pages < 100; pages++) {
      const rows = await table(tab).getAttribute("data-rows")
      if ((await table(tab).getAttribute("data-done")) === "true") break
      await table(tab).evaluate((element) => element.scrollTo({ top: element.scrollHeight }))
      await tab.locator(`[data-testid="sessions-table"]:not([data-rows="${rows}"])`).waitFor()
    }
    await table(tab).evaluate((element) => element.scrollTo({ top: element.scrollHeight }))
  })

/** Waits until the table has loaded `rows` rows, all of them (no next page). */
const listed = (tab: Page, rows: number) => Effect.promise(() => tab.locator(`[data-testid="sessions-table"][data-rows="${rows}"][data-done="true"]`).waitFor())

describe("the Studio's sessions table in a headless Chromium", () => {
  it.live("lists 10,000 sessions: the first page at once, the DOM holding only what is in view, scrolling to the oldest, narrowed by agent and by id", () =>
    Effect.gen(function*() {
      const studio = yield* Studio.start({ agents, tokens: { "tok-alice": "alice" }, prices: PRICES })
      const start = Date.now() - COUNT * 1000
      for (let i = 0; i < COUNT; i++) yield* studio.store.claim({ id: idOf(i), principal: "alice", agent: agentOf(i), now: start + i * 1000 })
      // The newest have run a turn: tokens, and a cost at the agent's price.
      for (let i = COUNT - 12; i < COUNT; i++) {
        const usage = { inputTokens: 1200 + i % 7 * 310, outputTokens: 180 + i % 5 * 95 }
        yield* studio.store.append(idOf(i), [{ _tag: "TurnEnd", sessionId: idOf(i), runId: "r1", seq: 1, turn: 1, usage }], start + i * 1000 + 500)
      }

      const tab = yield* studio.open({ token: "tok-alice", hash: "/sessions" })
      yield* Effect.promise(() => tab.locator(`[data-testid="session-row"][data-id="${idOf(COUNT - 1)}"]`).waitFor())
      const first = yield* rowsShown(tab)
      assert.deepStrictEqual(first.slice(0, 3), [
        { id: "s-09999", agent: "helper" },
        { id: "s-09998", agent: "main" },
        { id: "s-09997", agent: "helper" }
      ])
      // Only the rows in view and a few around them are in the DOM, never the whole page.
      assert.isBelow(first.length, 50)
      assert.deepStrictEqual(yield* Studio.axeViolations(tab), { light: [], dark: [] })
      yield* Studio.screenshot(tab, "sessions")

      yield* scrollToEnd(tab)
      yield* Effect.promise(() => tab.locator(`[data-testid="session-row"][data-id="${idOf(0)}"]`).waitFor())
      yield* listed(tab, COUNT)
      const last = yield* rowsShown(tab)
      assert.deepStrictEqual(last.at(-1), { id: "s-00000", agent: "main" })
      assert.isBelow(last.length, 50)

      yield* Effect.promise(() => tab.getByLabel("Search by id").fill("s-0999"))
      yield* listed(tab, 10)
      assert.deepStrictEqual(yield* rowsShown(tab), Array.from({ length: 10 }, (_, k) => ({ id: idOf(COUNT - 1 - k), agent: agentOf(COUNT - 1 - k) })))

      yield* Effect.promise(() => tab.getByLabel("Agent").selectOption("helper"))
      yield* listed(tab, 5)
      assert.deepStrictEqual(yield* rowsShown(tab), [9999, 9997, 9995, 9993, 9991].map((i) => ({ id: idOf(i), agent: "helper" })))

      yield* Effect.promise(() => tab.getByLabel("Search by id").fill(""))
      // The agent's sessions, a first page of them (more to come), then every one down to the oldest.
      yield* Effect.promise(() => tab.locator('[data-testid="sessions-table"][data-rows="100"][data-done="false"]').waitFor())
      yield* scrollToEnd(tab)
      yield* listed(tab, COUNT / 2)
      yield* Effect.promise(() => tab.locator(`[data-testid="session-row"][data-id="${idOf(1)}"]`).waitFor())
      assert.deepStrictEqual((yield* rowsShown(tab)).at(-1), { id: "s-00001", agent: "helper" })
    }).pipe(Effect.provide([TestModel.layer([]), Sandbox.layerNoop()])), 120_000)

  it.live("two principals each see their own sessions only, new ones as they start; a row opens its timeline by keyboard", () =>
    Effect.gen(function*() {
      const studio = yield* Studio.start({ agents, tokens: { "tok-alice": "alice", "tok-bob": "bob" } })
      const start = (token: string, id: string) => studio.request(token, "POST", "/sessions", { agent: "main", id })
      yield* start("tok-alice", "alice-1")
      yield* start("tok-bob", "bob-1")
      yield* start("tok-alice", "alice-2")
      yield* start("tok-bob", "bob-2")
      yield* start("tok-bob", "bob-3")

      const alice = yield* studio.open({ token: "tok-alice" })
      yield* listed(alice, 2)
      assert.deepStrictEqual((yield* rowsShown(alice)).map((row) => row.id), ["alice-2", "alice-1"])
      assert.strictEqual(yield* Effect.promise(() => alice.getByTestId("principal").textContent()), "Signed in as alice")

      const bob = yield* studio.open({ token: "tok-bob" })
      yield* listed(bob, 3)
      assert.deepStrictEqual((yield* rowsShown(bob)).map((row) => row.id), ["bob-3", "bob-2", "bob-1"])
      // A session started meanwhile joins the table without a reload (Alice's does not).
      yield* start("tok-alice", "alice-3")
      yield* start("tok-bob", "bob-4")
      yield* listed(bob, 4)
      assert.deepStrictEqual((yield* rowsShown(bob)).map((row) => row.id), ["bob-4", "bob-3", "bob-2", "bob-1"])

      yield* listed(alice, 3)
      assert.deepStrictEqual((yield* rowsShown(alice)).map((row) => row.id), ["alice-3", "alice-2", "alice-1"])

      // By keyboard: from the search field, past Refresh and into the table, to the newest session's link; Enter opens its timeline.
      yield* Effect.promise(async () => {
        await alice.getByLabel("Search by id").focus()
        for (let i = 0; i < 3; i++) await alice.keyboard.press("Tab")
      })
      assert.strictEqual(yield* Effect.promise(() => alice.evaluate("document.activeElement.closest('[data-testid=\"session-row\"]')?.dataset.id")), "alice-3")
      yield* Effect.promise(() => alice.keyboard.press("Enter"))
      assert.strictEqual(yield* Effect.promise(() => alice.getByTestId("timeline-id").textContent()), "alice-3")

      // A session of the other principal's is not found, the same as one that does not exist.
      yield* Effect.promise(() => bob.goto(`${studio.url}/studio#/sessions/alice-1`))
      yield* Effect.promise(() => bob.getByTestId("timeline-error").waitFor())
      assert.strictEqual(yield* Effect.promise(() => bob.getByTestId("run").count()), 0)
    }).pipe(Effect.provide([TestModel.layer([]), Sandbox.layerNoop()])), 60_000)

  it.live("ids as hostile as the server keeps them are listed as written and each opens its own timeline", () =>
    Effect.gen(function*() {
      const studio = yield* Studio.start({ agents, tokens: { "tok-alice": "alice" } })
      const ids = ["../x", "a/b?c#d", "<img src=x onerror=alert(1)>", "%00;--", " spaced ", "e\u0301 é", "#/approvals"]
      for (const id of ids) assert.strictEqual((yield* studio.request("tok-alice", "POST", "/sessions", { agent: "main", id })).status, 201)
      const tab = yield* studio.open({ token: "tok-alice" })
      yield* listed(tab, ids.length)
      assert.deepStrictEqual((yield* rowsShown(tab)).map((row) => row.id), [...ids].reverse())
      for (const id of ids) {
        yield* Effect.promise(async () => {
          await tab.locator(`[data-testid="session-row"]`).filter({ has: tab.getByTestId("session-link").getByText(id, { exact: true }) }).getByTestId("session-link").click()
          await tab.getByTestId("timeline-empty").waitFor()
        })
        assert.deepStrictEqual(
          [yield* Effect.promise(() => tab.getByTestId("timeline-id").textContent()), yield* Effect.promise(() => tab.getByTestId("timeline-error").count())],
          [id, 0]
        )
        yield* Effect.promise(async () => {
          await tab.goBack()
          await tab.getByTestId("sessions-table").waitFor()
        })
      }
      assert.strictEqual(yield* Effect.promise(() => tab.locator("img").count()), 0)
    }).pipe(Effect.provide([TestModel.layer([]), Sandbox.layerNoop()])), 60_000)

  it.live("the sign-in refuses a token that names nobody, is accessible, and the theme toggle's choice (its colours over the system's) stays", () =>
    Effect.gen(function*() {
      const studio = yield* Studio.start({ agents, tokens: { "tok-alice": "alice" } })
      const tab = yield* studio.open()
      yield* Studio.screenshot(tab, "signin")
      assert.deepStrictEqual(yield* Studio.axeViolations(tab), { light: [], dark: [] })
      yield* Effect.promise(async () => {
        await tab.getByLabel("API token").fill("tok-nobody")
        await tab.getByRole("button", { name: "Sign in" }).click()
      })
      assert.strictEqual(yield* Effect.promise(() => tab.getByTestId("signin-error").textContent()), "That token names nobody on this server.")
      yield* Studio.signIn(tab, "tok-alice")
      assert.strictEqual(yield* Effect.promise(() => tab.getByTestId("principal").textContent()), "Signed in as alice")

      // The theme toggle overrides the system's choice, and the choice outlives a reload (the sign-in too, for the tab's life).
      yield* Effect.promise(async () => {
        await tab.getByRole("button", { name: "Dark theme" }).click()
        await tab.locator('html[data-theme="dark"]').waitFor({ state: "attached" })
      })
      const theme = () => Effect.promise(() => tab.evaluate("document.documentElement.dataset.theme ?? null"))
      assert.strictEqual(yield* theme(), "dark")
      // The page's colours follow it (the system is light here): the dark background, and back.
      const background = () => Effect.promise(() => tab.evaluate("getComputedStyle(document.body).backgroundColor"))
      assert.strictEqual(yield* background(), "rgb(21, 24, 28)")
      yield* Effect.promise(() => tab.emulateMedia({ colorScheme: "dark" }))
      assert.strictEqual(yield* background(), "rgb(21, 24, 28)")
      yield* Effect.promise(() => tab.reload())
      yield* Effect.promise(() => tab.getByTestId("principal").waitFor())
      assert.deepStrictEqual([yield* theme(), yield* Effect.promise(() => tab.getByRole("button", { name: "Dark theme" }).getAttribute("aria-pressed"))], ["dark", "true"])
      // Toggled off under a dark system: the light colours, the toggle's choice over the system's.
      yield* Effect.promise(async () => {
        await tab.getByRole("button", { name: "Dark theme" }).click()
        await tab.locator('html[data-theme="light"]').waitFor({ state: "attached" })
      })
      assert.strictEqual(yield* background(), "rgb(255, 255, 255)")
      yield* Effect.promise(() => tab.getByRole("button", { name: "Sign out" }).click())
      yield* Effect.promise(() => tab.getByLabel("API token").waitFor())
    }).pipe(Effect.provide([TestModel.layer([]), Sandbox.layerNoop()])), 60_000)
})
