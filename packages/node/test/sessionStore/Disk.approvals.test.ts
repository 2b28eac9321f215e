/**
 * DiskSessionStore's approval log, beyond the suite every store runs (`approvalConformance`): one
 * file per record under `.approvals`, ids it does not keep refused before anything is written and
 * never made into paths, two stores on one directory answering one record once, its lock file
 * (stale or held), and a file that is not a record named.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, type FileSystem, Option, type Path, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type * as SessionStore from "@condukt/core/SessionStore"
import * as DiskSessionStore from "../../src/sessionStore/Disk.ts"
import { TempDir } from "@condukt/testing"
import { record, storeError, waiting } from "@condukt/testing/SessionStoreConformance"

const tempDir = TempDir.make("condukt-store-")

const withStore = <A, E, R extends FileSystem.FileSystem | Path.Path | Scope.Scope>(
  f: (store: SessionStore.Service, dir: string) => Effect.Effect<A, E, R>
) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* tempDir
    return yield* f(yield* DiskSessionStore.make({ dir }), dir)
  })).pipe(Effect.provide(NodeServices.layer))

describe("DiskSessionStore's approval log", () => {
  it.live("each record is one JSON file under .approvals, named by its id", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.save(waiting("s1", [record(2), record(1)]))
        assert.deepStrictEqual(fs.readdirSync(path.join(dir, ".approvals")).sort(), [`${record(1).id}.json`, `${record(2).id}.json`])
        assert.deepStrictEqual(JSON.parse(fs.readFileSync(path.join(dir, ".approvals", `${record(1).id}.json`), "utf8")), record(1))
        const done = yield* store.approvals!.answer(record(1).id, "denied", 1_100, { by: "bo" })
        assert.deepStrictEqual(JSON.parse(fs.readFileSync(path.join(dir, ".approvals", `${record(1).id}.json`), "utf8")), done)
      })
    ))

  it.live("a record id the store does not keep fails the save naming the directory, and nothing is written", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const error = yield* storeError(store.save(waiting("s1", [record(1), record(2, { id: "../s1" })])))
        assert.strictEqual(
          error?.message,
          `SessionStore.save: session s1 at ${path.join(dir, ".approvals")}: not an approval record (its id "../s1" is not one a store keeps (1 to 128 lowercase letters, digits, - and _, a letter or a digit first))`
        )
        assert.deepStrictEqual(fs.readdirSync(dir), [])
      })
    ))

  it.live("a hostile id is unknown to get and answer, and never read or written as a path", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.save(waiting("s1", [record(1)]))
        // A record-shaped file outside the log's directory, where `../x` would lead.
        fs.writeFileSync(path.join(dir, "x.json"), JSON.stringify(record(1, { id: "../x" })))
        for (const id of ["../x", "../../x", "/etc/passwd", ".lock", "X", `${record(1).id}/..`]) {
          assert.isTrue(Option.isNone(yield* store.approvals!.get(id)))
          assert.strictEqual((yield* Effect.flip(store.approvals!.answer(id, "approved", 1_100))).reason, "unknown")
        }
        assert.deepStrictEqual(JSON.parse(fs.readFileSync(path.join(dir, "x.json"), "utf8")), record(1, { id: "../x" }))
        assert.deepStrictEqual(fs.readdirSync(path.join(dir, ".approvals")), [`${record(1).id}.json`])
      })
    ))

  it.live("two stores on one directory answering one record at once: one answers, the other is refused as answered", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.save(waiting("s1", [record(1)]))
        const other = yield* DiskSessionStore.make({ dir })
        const outcomes = yield* Effect.forEach(
          [store, store, other, other],
          (s, i) => Effect.map(Effect.exit(s.approvals!.answer(record(1).id, "approved", 1_100, { by: `answerer ${i}` })), (exit) => exit._tag),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(outcomes.filter((tag) => tag === "Success").length, 1)
        const by = Option.getOrThrow(yield* other.approvals!.get(record(1).id)).by
        assert.strictEqual(by, `answerer ${outcomes.indexOf("Success")}`)
      })
    ))

  it.live("a lock file left by a process that died is removed once stale; a fresh one fails the answer naming it", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.save(waiting("s1", [record(1), record(2)]))
        const lock = path.join(dir, ".approvals", ".lock")
        fs.writeFileSync(lock, "")
        fs.utimesSync(lock, 0, 0)
        yield* store.approvals!.answer(record(1).id, "approved", 1_100)
        assert.isFalse(fs.existsSync(lock))
        fs.writeFileSync(lock, "")
        const error = yield* Effect.flip(store.approvals!.answer(record(2).id, "approved", 1_100))
        assert.strictEqual(
          error.message,
          `SessionStore.answer: at ${lock}: another process holds ${lock}; if none is writing approvals, remove the file`
        )
        assert.isUndefined(Option.getOrThrow(yield* store.approvals!.get(record(2).id)).outcome)
      })
    ), 20_000)

  it.live("a file that is not a record fails list and get naming it", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.save(waiting("s1", [record(1)]))
        const file = path.join(dir, ".approvals", `${record(1).id}.json`)
        fs.writeFileSync(file, "{\"id\":")
        const errors = yield* Effect.forEach([Effect.asVoid(store.approvals!.list()), Effect.asVoid(store.approvals!.get(record(1).id))], (effect) =>
          Effect.map(storeError(effect), (error) => [error?.method, error?.location, error?.reason._tag]))
        assert.deepStrictEqual(errors, [["list", file, "Corrupt"], ["get", file, "Corrupt"]])
      })
    ))
})
