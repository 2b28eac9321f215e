/**
 * The SessionStore suites through the package's public entry, as a user's store would run them:
 * `run` against the memory store (`@condukt/core`'s `SessionStore.makeMemory`), the reference the
 * durable stores (DiskSessionStore, SqliteSessionStore, SqlSessionStore) keep one behaviour with;
 * and the suite's cases run by hand against stores broken as a backend could be (one that drops
 * appended saves, one that folds the case of ids), each failing exactly the cases that find it.
 */
import { assert, describe, it, type Vitest } from "@effect/vitest"
import { Effect, Exit, Layer, type Scope } from "effect"
import * as SessionStore from "@condukt/core/SessionStore"
import * as SessionStoreConformance from "@condukt/testing/SessionStoreConformance"

SessionStoreConformance.run("SessionStore.makeMemory", (options) => Layer.sync(SessionStore.SessionStore, () => SessionStore.makeMemory(options)))

/** The titles of the suite's cases that fail against the store `make` gives (a fresh one per case). */
const failing = (make: () => SessionStore.Service) =>
  Effect.gen(function*() {
    const cases: Array<readonly [string, () => Effect.Effect<unknown, unknown, Scope.Scope>]> = []
    // The cases captured instead of registered, to be run here.
    const capture = (title: string, body: () => Effect.Effect<unknown, unknown, Scope.Scope>) => void cases.push([title, body])
    SessionStoreConformance.conformance((f) => Effect.suspend(() => f(make())), capture as unknown as Vitest.Tester<Scope.Scope>)
    const failed: Array<string> = []
    for (const [title, body] of cases) if (Exit.isFailure(yield* Effect.exit(Effect.scoped(body())))) failed.push(title)
    return { cases: cases.length, failed }
  })

describe("SessionStoreConformance.conformance", () => {
  it.live("fails a store that drops appended saves in every case that appends, and no other", () =>
    Effect.gen(function*() {
      const dropsAppends = () => {
        const store = SessionStore.makeMemory()
        return { ...store, save: (snapshot, options) => (options?.appended === undefined ? store.save(snapshot, options) : Effect.void) } satisfies SessionStore.Service
      }
      assert.deepStrictEqual(yield* failing(dropsAppends), {
        cases: 7,
        failed: [
          "a first save, then turns appended one by one, load back as the last snapshot",
          "a save that rewrites (a compaction) replaces the appended history",
          "a save of assigns alone (no new message) is kept",
          "an appended save with a batch of running calls keeps it; the next save without one ends it",
          "hostile ids: each is refused with InvalidSessionId by save, load and clear, or round-trips apart from every other id"
        ]
      })
    }))

  it.live("fails a store that folds the case of ids (alice and Alice one session) in the hostile-id case alone", () =>
    Effect.gen(function*() {
      const foldsCase = () => {
        const store = SessionStore.makeMemory()
        return {
          ...store,
          load: (id) => store.load(id.toLowerCase()),
          save: (snapshot, options) => store.save({ ...snapshot, id: snapshot.id.toLowerCase() }, options),
          clear: (id) => store.clear(id.toLowerCase())
        } satisfies SessionStore.Service
      }
      assert.deepStrictEqual(yield* failing(foldsCase), {
        cases: 7,
        failed: ["hostile ids: each is refused with InvalidSessionId by save, load and clear, or round-trips apart from every other id"]
      })
    }))
})
