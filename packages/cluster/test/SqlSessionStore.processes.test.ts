/**
 * Several processes on one database through SqlSessionStore: two saving one session at once on
 * Postgres and on one SQLite file (one saves, the other fails with Conflict), and eight opening
 * one new SQLite file at once (the first-time setup two processes meet on).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as path from "node:path"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as SqlSessionStore from "../src/SqlSessionStore.ts"
import { TempDir } from "@condukt/testing"
import { snapshot } from "@condukt/testing/SessionStoreConformance"
import { storeWriter, twoWriters, winnerOf, writerNames, writerTurn } from "../../node/test/sessionStore/processes.ts"
import { EmbeddedPostgres, layer as embeddedPostgres } from "./support/embeddedPostgres.ts"

const tempDir = TempDir.make("condukt-store-")

const fixture = path.resolve(import.meta.dirname, "fixtures/sqlStoreWriter.ts")

const conflict = (location: string) =>
  `SessionStore.save: session shared at ${location}#condukt_sessions/shared: another writer saved this session since it was last loaded or saved here (its row is at revision 2, 1 when last loaded or saved here); nothing was overwritten, start the session again to resume from what it saved`

const seed = snapshot("shared", 1)

/** What the store holds once the writer `winner` saved. */
const winnersHistory = (winner: 0 | 1) =>
  Option.some({ ...seed, messages: [...seed.messages, ...writerTurn(writerNames[winner])], updatedAt: seed.updatedAt + 1 })

describe("SqlSessionStore, several processes on one SQLite file", () => {
  it.live("two processes saving one session at once: one saves, the other fails with Conflict; the store holds the winner's turn", () =>
    Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "sessions.db")
      const store = yield* SqlSessionStore.make({ location: file }).pipe(Effect.provide(yield* Layer.build(SqliteClient.layer({ file }))))
      yield* store.save(seed)
      const outcomes = yield* twoWriters("sqlite", file, "shared", fixture)
      const winner = winnerOf(outcomes)
      assert.deepStrictEqual(outcomes[1 - winner], { reason: "Conflict", message: conflict(file) })
      const reread = yield* SqlSessionStore.make({ location: file }).pipe(Effect.provide(yield* Layer.build(SqliteClient.layer({ file }))))
      assert.deepStrictEqual(yield* reread.load("shared"), winnersHistory(winner))
    })), 20_000)

  it.live("eight processes opening one new database at once, three rounds: every open and save succeeds", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const names = Array.from({ length: 8 }, (_, i) => `p${i}`)
      const openers = yield* Effect.forEach(names, (name) => storeWriter(["opener", name], fixture))
      for (const opener of openers) assert.strictEqual(yield* opener.next, "ready")
      for (const round of [1, 2, 3]) {
        const file = path.join(dir, `round${round}.db`)
        yield* Effect.forEach(openers, (opener) => opener.send(file), { discard: true })
        assert.deepStrictEqual(yield* Effect.forEach(openers, (opener) => opener.next), names.map(() => "ok"))
        const store = yield* SqlSessionStore.make({ location: file }).pipe(Effect.provide(yield* Layer.build(SqliteClient.layer({ file }))))
        const loaded = yield* Effect.forEach(names, (name) => Effect.map(store.load(name), Option.isSome))
        assert.deepStrictEqual(loaded, names.map(() => true))
      }
      yield* Effect.forEach(openers, (opener) => opener.end, { discard: true })
    })), 30_000)
})

layer(embeddedPostgres, { excludeTestServices: true, timeout: "60 seconds" })("SqlSessionStore, several processes on one Postgres", (it) => {
  it.effect("two processes saving one session at once: one saves, the other fails with Conflict; the store holds the winner's turn", () =>
    Effect.gen(function*() {
      const postgres = yield* EmbeddedPostgres
      const database = yield* Effect.orDie(postgres.createDatabase)
      const location = `${postgres.socketDir}:${database}`
      const store = yield* Effect.orDie(Effect.flatMap(Layer.build(postgres.client(database)), (client) => SqlSessionStore.make({ location }).pipe(Effect.provide(client))))
      yield* store.save(seed)
      const outcomes = yield* Effect.scoped(twoWriters("pg", location, "shared", fixture))
      const winner = winnerOf(outcomes)
      assert.deepStrictEqual(outcomes[1 - winner], { reason: "Conflict", message: conflict(location) })
      const reread = yield* Effect.orDie(Effect.flatMap(Layer.build(postgres.client(database)), (client) => SqlSessionStore.make({ location }).pipe(Effect.provide(client))))
      assert.deepStrictEqual(yield* reread.load("shared"), winnersHistory(winner))
    }))
})
