/**
 * The Studio in front of a cluster: two runners on one SQLite file, each a process serving the API
 * and the Studio (fixtures/clusterServer.ts), their servers' records in the same database. A run
 * started through runner A's server waits for an approval; a person on runner B's Studio sees the
 * session waiting (and which runner holds it), approves the call from B's inbox, and watches the run finish on B's timeline —
 * the page works on whichever machine it is opened, as the API does. Bob, on B, sees none of it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as path from "node:path"
import type { Page } from "playwright-core"
import { TempDir } from "@condukt/testing"
import { launchBrowser } from "../../../test/support/browser.ts"
import * as Script from "./fixtures/clusterScript.ts"
import { twoServers } from "./fixtures/clusterServers.ts"
import { open, request } from "./fixtures/sseClient.ts"
import { axeViolations, signIn, VIEWPORT } from "./fixtures/studio.ts"

const tempDir = TempDir.make("condukt-store-")

const alice = "tok-alice"
const bob = "tok-bob"

/** A tab on `url`'s Studio at `hash`, signed in with `token`. */
const studioTab = (browser: { newContext: (options: object) => Promise<{ newPage: () => Promise<Page> }> }, url: string, token: string, hash: string) =>
  Effect.promise(async () => {
    const context = await browser.newContext({ viewport: VIEWPORT })
    const tab = await context.newPage()
    tab.setDefaultTimeout(30_000)
    await tab.goto(`${url}/studio#${hash}`)
    return tab
  }).pipe(Effect.tap((tab) => signIn(tab, token)))

const Row = Schema.Struct({ id: Schema.String, state: Schema.String })

/** The sessions table's rows: id and state. */
const rows = (tab: Page) =>
  Effect.promise(() =>
    tab.evaluate(`[...document.querySelectorAll('[data-testid="session-row"]')].map((row) => ({ id: row.dataset.id, state: row.querySelector('[data-testid="session-state"]').textContent }))`)
  ).pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(Row))), Effect.orDie)

describe("the Studio in front of a cluster", () => {
  it.live("a run started through runner A waits for approval; on runner B's Studio the session shows waiting, the call is approved from B's inbox and the run is seen to its end on B's timeline; bob sees none of it", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const { urls } = yield* twoServers("sqlite", path.join(dir, "cluster.db"))
      const id = "deploy-1"
      const prompt = "deploy prod"
      assert.strictEqual((yield* request(urls.a, "/sessions", { token: alice, body: { id } })).status, 201)
      // The run streamed through A, read until it waits for the answer.
      const stream = yield* open(urls.a, `/sessions/${id}/runs/stream`, { token: alice, body: { prompt } })
      assert.strictEqual(stream.status, 200, stream.body)
      while ((yield* stream.next).event !== "ApprovalRequested") {
        // the text deltas, the call
      }

      const browser = yield* Effect.orDie(launchBrowser)
      const sessions = yield* studioTab(browser, urls.b, alice, "/sessions")
      yield* Effect.promise(() => sessions.locator(`[data-testid="session-row"][data-id="${id}"] [data-testid="session-state"]`).filter({ hasText: "waiting" }).waitFor())
      assert.deepStrictEqual(yield* rows(sessions), [{ id, state: "waiting" }])
      // Where it runs, as each server's runner knows from the shards it holds: one of them, the other not.
      const runnerOn = (url: string) => Effect.map(request(url, `/sessions/${id}`, { token: alice }), (got) => got.body.runner as string)
      const runners = [yield* runnerOn(urls.a), yield* runnerOn(urls.b)]
      assert.deepStrictEqual(
        runners.map((runner) => runner.replace(/^runner 127\.0\.0\.1:\d+$/, "runner <address>")).sort(),
        ["another runner", "runner <address>"]
      )
      assert.strictEqual(yield* Effect.promise(() => sessions.getByTestId("session-runner").textContent()), runners[1])

      const inbox = yield* studioTab(browser, urls.b, alice, "/approvals")
      const card = inbox.getByTestId("approval").filter({ has: inbox.getByTestId("approval-session").filter({ hasText: id }) })
      yield* Effect.promise(() => card.waitFor())
      assert.deepStrictEqual(yield* axeViolations(inbox), { light: [], dark: [] })
      yield* Effect.promise(async () => {
        await card.getByLabel("Reason (optional)").fill("Prod is ready.")
        await card.getByRole("button", { name: "Approve" }).click()
        await inbox.getByTestId("approvals-empty").waitFor()
      })

      const timeline = yield* studioTab(browser, urls.b, alice, `/sessions/${id}`)
      yield* Effect.promise(() => timeline.getByTestId("run-outcome").filter({ hasText: "completed" }).waitFor())
      const seen = yield* Effect.promise(async () => ({
        calls: await timeline.getByTestId("call").evaluateAll((calls) => calls.map((call) => [(call as HTMLElement).dataset.tool, (call as HTMLElement).dataset.state])),
        approval: await timeline.getByTestId("approval-outcome").textContent(),
        text: (await timeline.getByTestId("turn-text").allTextContents()).join("")
      }))
      // The call, its answer, and every delta of both turns in order, once.
      const words = (text: string) => text.replaceAll(/\s+/g, " ").trim()
      assert.deepStrictEqual({ ...seen, text: words(seen.text) }, {
        calls: [["deploy", "ok"]],
        approval: "approved by alice: Prod is ready.",
        text: words([...Script.deltas(prompt, "first"), ...Script.deltas(prompt, "last")].join(""))
      })

      // Bob, on B: no session, no approval.
      const bobs = yield* studioTab(browser, urls.b, bob, "/sessions")
      yield* Effect.promise(() => bobs.getByTestId("sessions-empty").waitFor())
      const bobsInbox = yield* studioTab(browser, urls.b, bob, "/approvals/audit")
      yield* Effect.promise(() => bobsInbox.getByTestId("audit-empty").waitFor())
    })), 180_000)
})
