/**
 * SqlSessionStore on a real Postgres the file starts itself (support/embeddedPostgres.ts): the
 * SessionStore conformance suite, writers that meet on one session, rows that are not the store's.
 * Each case gets a database of its own on the one server.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Scope } from "effect"
import * as fs from "node:fs"
import { SqlClient } from "effect/sql"
import { Agent, Sandbox, Session } from "@condukt/core"
import type * as SessionStore from "@condukt/core/SessionStore"
import { TestModel } from "@condukt/testing"
import * as SqlSessionStore from "../src/SqlSessionStore.ts"
import { approvalConformance, conformance, revisionConflicts, snapshot, storeError } from "@condukt/testing/SessionStoreConformance"
import { EmbeddedPostgres, layer as embeddedPostgres, start } from "./support/embeddedPostgres.ts"

const location = "postgres://embedded/test"

/** A fresh database; `f` gets a store on it and runs with its SqlClient. */
const withDatabase = <A, E>(
  f: (store: SessionStore.Service) => Effect.Effect<A, E, SqlClient.SqlClient>,
  options: { readonly approvalRetention?: number } = {}
) =>
  Effect.gen(function*() {
    const postgres = yield* EmbeddedPostgres
    const database = yield* Effect.orDie(postgres.createDatabase)
    return yield* Effect.flatMap(SqlSessionStore.make({ location, ...options }), f).pipe(Effect.provide(postgres.client(database)), Effect.orDie)
  })

const failure = <A>(effect: Effect.Effect<A, SessionStore.SessionStoreError>) => Effect.map(storeError(effect), (error) => error?.message)

/** The user id a process runs as, from /proc. */
const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1])

layer(embeddedPostgres, { excludeTestServices: true, timeout: "60 seconds" })("SqlSessionStore on Postgres", (it) => {
  it.effect("the embedded server runs as nobody when the tests run as root; its scope stops it and removes its directory", () =>
    Effect.gen(function*() {
      const { pid, socketDir } = yield* Effect.scoped(Effect.gen(function*() {
        const postgres = yield* start
        const [row] = yield* Effect.orDie(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return yield* sql`SELECT current_user AS "user", 1 + 1 AS two`
        }).pipe(Effect.provide(postgres.client("postgres"))))
        assert.deepStrictEqual(row, { user: "postgres", two: 2 })
        assert.strictEqual(uidOf(postgres.pid), process.getuid?.() === 0 ? 65534 : process.getuid?.())
        assert.isTrue(fs.existsSync(postgres.socketDir))
        return postgres
      }))
      assert.isFalse(fs.existsSync(`/proc/${pid}`))
      assert.isFalse(fs.existsSync(socketDir))
    }))

  conformance((f) => withDatabase((store) => f(store)), it.effect)
  approvalConformance((f, options) => withDatabase((store) => f(store), options), it.effect)

  it.effect("a save another writer got to first fails with Conflict naming the row, and overwrites nothing", () =>
    withDatabase((store) => revisionConflicts(store, SqlSessionStore.make({ location }), location)))

  it.effect("ten writers on their own connections save one session at once: one saves, nine fail with Conflict, the row holds the winner's turn", () =>
    withDatabase((store) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("shared", 1))
        const writers = yield* Effect.forEach(Array.from({ length: 10 }, (_, i) => i), (i) =>
          Effect.gen(function*() {
            const writer = yield* SqlSessionStore.make({ location })
            yield* writer.load("shared")
            return { i, writer }
          }))
        const outcomes = yield* Effect.forEach(
          writers,
          ({ i, writer }) =>
            Effect.exit(writer.save({ ...snapshot("shared", 2), assigns: { writer: i } }, { appended: 4 })),
          { concurrency: "unbounded" }
        )
        const saved = outcomes.flatMap((exit, i) => (exit._tag === "Success" ? [i] : []))
        assert.strictEqual(saved.length, 1)
        const refused = yield* Effect.forEach(writers.filter(({ i }) => i !== saved[0]), ({ writer }) =>
          Effect.map(storeError(writer.save(snapshot("shared", 3))), (error) => error?.reason._tag))
        assert.deepStrictEqual(refused, Array.from({ length: 9 }, () => "Conflict"))
        assert.deepStrictEqual(yield* store.load("shared"), Option.some({ ...snapshot("shared", 2), assigns: { writer: saved[0] } }))
      })
    ))

  it.effect("a server that went away fails the store's calls with Unavailable naming the database", () =>
    Effect.gen(function*() {
      const errors = yield* Effect.scoped(Effect.gen(function*() {
        // A server of this case's own, stopped while the store is open.
        const { stopped, store } = yield* Effect.gen(function*() {
          const scope = yield* Scope.make()
          const postgres = yield* Scope.provide(start, scope)
          const client = yield* Layer.build(postgres.client("postgres"))
          const store = yield* Effect.orDie(SqlSessionStore.make({ location }).pipe(Effect.provide(client)))
          yield* store.save(snapshot("s1", 1))
          return { store, stopped: Scope.close(scope, Exit.void) }
        })
        yield* stopped
        return yield* Effect.all([storeError(store.load("s1")), storeError(store.save(snapshot("s1", 2), { appended: 4 }))])
      }))
      assert.deepStrictEqual(
        errors.map((error) => [error?.method, error?.reason._tag, error?.location]),
        [["load", "Unavailable", location], ["save", "Unavailable", location]]
      )
    }))

  it.effect("a session saving to Postgres is resumed by a later start: the model's second request holds the first conversation", () =>
    withDatabase((store) =>
      Effect.gen(function*() {
        const agent = Agent.make({ name: "planner", model: "test:x" })
        const visit = (prompt: string) =>
          Effect.scoped(Effect.gen(function*() {
            const session = yield* Session.start(agent, { id: "ticket-42", store, sandbox: Sandbox.layerNoop() })
            return (yield* session.run(prompt)).text
          }))
        assert.deepStrictEqual([yield* visit("The release is on Friday."), yield* visit("When is the release?")], ["Noted.", "On Friday."])
        const requests = yield* (yield* TestModel.TestModel).requests
        assert.deepStrictEqual(requests[1]?.messages.map((message) => message._tag), ["UserMessage", "AssistantMessage", "UserMessage"])
        assert.strictEqual(Option.getOrThrow(yield* store.load("ticket-42")).messages.length, 4)
      }).pipe(Effect.provide(TestModel.layer([TestModel.text("Noted."), TestModel.text("On Friday.")])))
    ))

  it.effect("a message row that is not JSON fails the load naming the row, and is left as it was", () =>
    withDatabase((store) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* store.save(snapshot("s1", 1))
        yield* sql`UPDATE condukt_messages SET body = '{"_tag":' WHERE idx = 2`
        assert.strictEqual(
          yield* failure(store.load("s1")),
          `SessionStore.load: session s1 at ${location}#condukt_messages/s1/2: not a session snapshot (Unexpected end of JSON input)`
        )
        assert.deepStrictEqual(yield* sql`SELECT body FROM condukt_messages WHERE idx = 2`, [{ body: "{\"_tag\":" }])
      })
    ))

  it.effect("a history longer than one INSERT's rows is saved and loads back whole", () =>
    withDatabase((store) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("long", 200))
        yield* store.save(snapshot("long", 201), { appended: 4 })
        assert.deepStrictEqual(yield* store.load("long"), Option.some(snapshot("long", 201)))
      })
    ))
})
