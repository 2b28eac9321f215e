/**
 * SessionStoreConformance — what every `SessionStore` backend must do, as suites a backend's test
 * file registers, public so users can run them against their own stores.
 *
 * - `conformance(use)`: saves that append and saves that rewrite load back the same snapshot,
 *   clear forgets, an unknown id is None, and the hostile-id corpus (`HostileSessionIds`) is
 *   refused or kept apart.
 * - `approvalConformance(use)`: the store's approval log (`SessionStore.Service.approvals`).
 * - `revisionConflicts(store, another, location)`: the revision check of a store whose sessions
 *   carry a revision (two writers on one database).
 *
 * The suites never build a store: `use` gives a fresh one per test (a store `Layer` built in the
 * test's scope, a store over a fresh `TempDir`), so this package imports no backend. Each case runs
 * with `it.live` by default, or with the `it.effect` of a shared layer the store needs (a server).
 * The snapshots the suites save (`snapshot`, `turn`) and `storeError` are exported for a backend's
 * own tests; `readOnly` makes a directory unwritable for a file store's error tests.
 */
import { assert, describe, it, type Vitest } from "@effect/vitest"
import { Context, Effect, Layer, Option, type Scope } from "effect"
import * as SessionId from "@condukt/core/SessionId"
import * as SessionStore from "@condukt/core/SessionStore"
import * as Snapshot from "@condukt/core/Snapshot"
import * as HostileSessionIds from "./HostileSessionIds.ts"
import * as ReadOnlyDir from "./internal/readOnlyDir.ts"
import { approvalConformance, record, waiting } from "./internal/sessionStoreApprovals.ts"
import { snapshot, storeError, turn } from "./internal/sessionStoreFixtures.ts"

export { approvalConformance, record, snapshot, storeError, turn, waiting }

/**
 * Makes `dir` read-only for this process until the scope closes, by the first way that holds here:
 * permission bits, which root ignores; then `chattr +i`, which overlay and older tmpfs refuse; then
 * a read-only bind mount. Where none holds, the running test is skipped, naming why.
 */
export const readOnly = (dir: string): Effect.Effect<void, never, Scope.Scope> => Effect.asVoid(ReadOnlyDir.make(dir))

/**
 * The revision check of a store whose sessions carry a revision (the SQLite and SQL stores):
 * `store` and what `another` opens are two writers on one database; `location` is what errors name.
 * A save the other writer got to first fails with Conflict, whole message asserted, and overwrites
 * nothing; loading again and saving from there works; two writers starting one new session; a save
 * after a clear elsewhere.
 */
export const revisionConflicts = <E, R>(store: SessionStore.Service, another: Effect.Effect<SessionStore.Service, E, R>, location: string) =>
  Effect.gen(function*() {
    const conflict = (detail: string, id = "s1") =>
      `SessionStore.save: session ${id} at ${location}#condukt_sessions/${id}: another writer saved this session since it was last loaded or saved here (${detail}); nothing was overwritten, start the session again to resume from what it saved`
    const failure = <A>(effect: Effect.Effect<A, SessionStore.SessionStoreError>) => Effect.map(storeError(effect), (error) => error?.message)
    yield* store.save(snapshot("s1", 1))
    // Another process resumes the session and saves a turn.
    const other = yield* another
    assert.deepStrictEqual(yield* other.load("s1"), Option.some(snapshot("s1", 1)))
    yield* other.save(snapshot("s1", 2), { appended: 4 })
    const mine = { ...snapshot("s1", 2), assigns: { mine: true } }
    const error = yield* storeError(store.save(mine, { appended: 4 }))
    assert.strictEqual(error?.reason._tag, "Conflict")
    assert.strictEqual(error?.message, conflict("its row is at revision 2, 1 when last loaded or saved here"))
    assert.strictEqual(yield* failure(store.save(mine)), conflict("its row is at revision 2, 1 when last loaded or saved here"))
    assert.deepStrictEqual(yield* (yield* another).load("s1"), Option.some(snapshot("s1", 2)))
    // Loading again reads what the other writer saved; saving from there works, and the other one is refused.
    assert.deepStrictEqual(yield* store.load("s1"), Option.some(snapshot("s1", 2)))
    yield* store.save(snapshot("s1", 3), { appended: 4 })
    assert.strictEqual(yield* failure(other.save(snapshot("s1", 3))), conflict("its row is at revision 3, 2 when last loaded or saved here"))
    // Two writers starting the same new session; a save after a clear elsewhere.
    const fresh = yield* another
    assert.isTrue(Option.isNone(yield* fresh.load("s2")))
    assert.isTrue(Option.isNone(yield* other.load("s2")))
    yield* other.save(snapshot("s2", 1))
    assert.strictEqual(yield* failure(fresh.save(snapshot("s2", 1))), conflict("its row was created", "s2"))
    yield* store.clear("s1")
    assert.strictEqual(yield* failure(other.save(snapshot("s1", 4))), conflict("its row was removed"))
    assert.isTrue(Option.isNone(yield* store.load("s1")))
    // Released (its session stopped here) and loaded again at its next start: the check holds from that load.
    yield* store.save(snapshot("s1", 1))
    assert.isDefined(store.release)
    yield* store.release!("s1")
    assert.deepStrictEqual(yield* store.load("s1"), Option.some(snapshot("s1", 1)))
    const third = yield* another
    assert.deepStrictEqual(yield* third.load("s1"), Option.some(snapshot("s1", 1)))
    yield* third.save(snapshot("s1", 2), { appended: 4 })
    assert.strictEqual(yield* failure(store.save(snapshot("s1", 2), { appended: 4 })), conflict("its row is at revision 2, 1 when last loaded or saved here"))
  })

/**
 * Runs the suite against the store `use` gives (a fresh one per test), each case with `test`:
 * `it.live` by default, or the `it.effect` of a shared layer whose services `use` needs (a server).
 */
export const conformance = <R = never>(
  use: <A, E>(f: (store: SessionStore.Service) => Effect.Effect<A, E>) => Effect.Effect<A, E | SessionStore.SessionStoreError, R>,
  // `it.live` needs nothing but a Scope: it serves any `R` whose caller leaves `test` out (R = never).
  test: Vitest.Tester<R | Scope.Scope> = it.live as Vitest.Tester<R | Scope.Scope>
) => {
  test("an id never saved loads as none", () =>
    use((store) => Effect.map(store.load("nobody"), (loaded) => assert.isTrue(Option.isNone(loaded)))))

  test("a first save, then turns appended one by one, load back as the last snapshot", () =>
    use((store) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        for (let turns = 2; turns <= 5; turns++) yield* store.save(snapshot("s1", turns), { appended: 4 })
        assert.deepStrictEqual(yield* store.load("s1"), Option.some(snapshot("s1", 5)))
      })
    ))

  test("a save that rewrites (a compaction) replaces the appended history", () =>
    use((store) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        yield* store.save(snapshot("s1", 3), { appended: 8 })
        const compacted = Snapshot.make({ ...snapshot("s1", 3), messages: turn(3) })
        yield* store.save(compacted)
        yield* store.save({ ...compacted, messages: [...turn(3), ...turn(4)] }, { appended: 4 })
        assert.deepStrictEqual(yield* store.load("s1"), Option.some({ ...compacted, messages: [...turn(3), ...turn(4)] }))
      })
    ))

  test("a save of assigns alone (no new message) is kept", () =>
    use((store) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        yield* store.save({ ...snapshot("s1", 1), assigns: { ticket: "ENG-1" }, updatedAt: 5_000 }, { appended: 0 })
        assert.deepStrictEqual(yield* store.load("s1"), Option.some({ ...snapshot("s1", 1), assigns: { ticket: "ENG-1" }, updatedAt: 5_000 }))
      })
    ))

  test("an appended save with a batch of running calls keeps it; the next save without one ends it", () =>
    use((store) =>
      Effect.gen(function*() {
        const batch = { waiting: [], results: [{ callId: "c1", content: "ok", isError: false }], started: ["c2"] }
        yield* store.save(snapshot("s1", 1))
        yield* store.save({ ...snapshot("s1", 2), batch }, { appended: 4 })
        assert.deepStrictEqual(yield* store.load("s1"), Option.some({ ...snapshot("s1", 2), batch }))
        yield* store.save(snapshot("s1", 3), { appended: 4 })
        assert.deepStrictEqual(yield* store.load("s1"), Option.some(snapshot("s1", 3)))
      })
    ))

  test("sessions are kept apart, and clear forgets one (twice is fine)", () =>
    use((store) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("a", 1))
        yield* store.save(snapshot("b", 2))
        yield* store.clear("a")
        yield* store.clear("a")
        assert.isTrue(Option.isNone(yield* store.load("a")))
        assert.deepStrictEqual(yield* store.load("b"), Option.some(snapshot("b", 2)))
      })
    ))

  test("hostile ids: each is refused with InvalidSessionId by save, load and clear, or round-trips apart from every other id", () =>
    use((store) =>
      Effect.gen(function*() {
        const ids = HostileSessionIds.accepted
        /** The id's own snapshot: its assigns name it, so a load of another's shows. */
        const own = (id: string, i: number, turns: number) => snapshot(id, turns, { assigns: { owner: i } })
        for (const [i, id] of ids.entries()) yield* store.save(own(id, i, 1))
        const refusals: Array<ReadonlyArray<string | undefined>> = []
        for (const { id } of HostileSessionIds.refused) {
          for (const attempt of [store.save(snapshot(id, 1)), store.load(id), store.clear(id)]) {
            const error = yield* storeError(attempt)
            refusals.push([SessionId.show(id), error?.method, error?.reason.message])
          }
        }
        assert.deepStrictEqual(
          refusals,
          HostileSessionIds.refused.flatMap(({ description, id }) =>
            ["save", "load", "clear"].map((method) => [SessionId.show(id), method, new SessionId.InvalidSessionId({ description }).message])
          )
        )
        // A turn appended to each, then every one read back: its own history, nothing of another's.
        for (const [i, id] of ids.entries()) yield* store.save(own(id, i, 2), { appended: 4 })
        assert.deepStrictEqual(yield* Effect.forEach(ids, (id) => store.load(id)), ids.map((id, i) => Option.some(own(id, i, 2))))
        // Clearing every other id leaves the rest as they were.
        for (const [i, id] of ids.entries()) if (i % 2 === 0) yield* store.clear(id)
        assert.deepStrictEqual(
          yield* Effect.forEach(ids, (id) => store.load(id)),
          ids.map((id, i) => (i % 2 === 0 ? Option.none() : Option.some(own(id, i, 2))))
        )
      })
    ))
}

/**
 * What a case asks of the store it is given: the approval log's retention (the approval suite's
 * retention case asks for one; every other case passes none).
 *
 * @since 0.1.0
 * @category models
 */
export interface StoreOptions {
  readonly approvalRetention?: number
}

/**
 * Registers the suites for one store under `describe(name)`: `conformance`, and
 * `approvalConformance` unless `approvals` is false (a store that keeps no approval log). Each case
 * builds `layer(options)` afresh in its own scope (`Layer.fresh`), so no case sees another's
 * sessions: a layer that owns its state (a store on a `TempDir.make()` acquired in the layer, an
 * in-memory store) is enough. A layer that fails to build fails the case with its error.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <E>(
  name: string,
  layer: (options: StoreOptions) => Layer.Layer<SessionStore.SessionStore, E>,
  suites: { readonly approvals?: boolean } = {}
): void => {
  describe(name, () => {
    const use = <A, E2>(f: (store: SessionStore.Service) => Effect.Effect<A, E2>, options: StoreOptions = {}) =>
      Effect.scoped(
        Effect.flatMap(Effect.orDie(Layer.build(Layer.fresh(layer(options)))), (context) => f(Context.get(context, SessionStore.SessionStore)))
      )
    conformance(use)
    if (suites.approvals !== false) approvalConformance(use)
  })
}
