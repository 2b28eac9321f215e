import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, type FileSystem, Option, type Path, type Scope } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as DiskSessionStore from "../../src/sessionStore/Disk.ts"
import type * as SessionStore from "@condukt/core/SessionStore"
import { TempDir } from "@condukt/testing"
import { approvalConformance, conformance, readOnly, snapshot, storeError, turn } from "@condukt/testing/SessionStoreConformance"
import { twoWriters, winnerOf, writerNames, writerTurn } from "./processes.ts"

const tempDir = TempDir.make("condukt-store-")

const withStore = <A, E, R extends FileSystem.FileSystem | Path.Path | Scope.Scope>(
  f: (store: SessionStore.Service, dir: string) => Effect.Effect<A, E, R>,
  options: { readonly approvalRetention?: number } = {}
) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* tempDir
    return yield* f(yield* DiskSessionStore.make({ dir, ...options }), dir)
  })).pipe(Effect.provide(NodeServices.layer))

/** The message of a save of `s1` (or `id`) that another writer got to first. */
const conflict = (file: string, detail: string, id = "s1") =>
  `SessionStore.save: session ${id} at ${file}: another writer saved this session since it was last loaded or saved here (${detail}); nothing was overwritten, start the session again to resume from what it saved`

const loadError = (store: SessionStore.Service, id: string) => Effect.map(storeError(store.load(id)), (error) => error?.message)

describe("DiskSessionStore", () => {
  conformance((f) => withStore((store) => f(store)))
  approvalConformance((f, options) => withStore((store) => f(store), options))

  it.live("a turn is appended to the log; the snapshot file is not rewritten", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        const before = fs.readFileSync(path.join(dir, "s1.json"), "utf8")
        yield* store.save(snapshot("s1", 2), { appended: 4 })
        assert.strictEqual(fs.readFileSync(path.join(dir, "s1.json"), "utf8"), before)
        const lines = fs.readFileSync(path.join(dir, "s1.log"), "utf8").split("\n")
        assert.strictEqual(lines.length, 2)
        assert.deepStrictEqual(JSON.parse(lines[0]!).messages, turn(2))
        assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["s1.json", "s1.log"])
      })
    ))

  it.live("a log grown past the snapshot is folded into a new snapshot file", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const big = { note: "x".repeat(20_000) }
        let last = snapshot("s1", 1, { assigns: big })
        yield* store.save(last)
        for (let turns = 2; turns <= 6; turns++) {
          last = snapshot("s1", turns, { assigns: big })
          yield* store.save(last, { appended: 4 })
        }
        assert.isFalse(fs.existsSync(path.join(dir, "s1.log")))
        const reopened = yield* DiskSessionStore.make({ dir })
        assert.deepStrictEqual(yield* reopened.load("s1"), Option.some(last))
      })
    ))

  it.live("a last log line without its newline (an append a crash cut short) is ignored", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        yield* store.save(snapshot("s1", 2), { appended: 4 })
        fs.appendFileSync(path.join(dir, "s1.log"), "{\"generation\":\"")
        const reopened = yield* DiskSessionStore.make({ dir })
        assert.deepStrictEqual(yield* reopened.load("s1"), Option.some(snapshot("s1", 2)))
        // The torn line is never continued: the next save writes a new snapshot file.
        yield* reopened.save(snapshot("s1", 3), { appended: 4 })
        assert.isFalse(fs.existsSync(path.join(dir, "s1.log")))
        assert.deepStrictEqual(yield* (yield* DiskSessionStore.make({ dir })).load("s1"), Option.some(snapshot("s1", 3)))
      })
    ))

  it.live("log lines of an older generation (a crash after the rename, before the log's removal) are skipped", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        yield* store.save(snapshot("s1", 2), { appended: 4 })
        const staleLog = fs.readFileSync(path.join(dir, "s1.log"))
        const compacted = { ...snapshot("s1", 2), messages: turn(2) }
        yield* store.save(compacted)
        fs.writeFileSync(path.join(dir, "s1.log"), staleLog)
        assert.deepStrictEqual(yield* (yield* DiskSessionStore.make({ dir })).load("s1"), Option.some(compacted))
      })
    ))

  it.live("a corrupt or truncated snapshot file fails the load naming it, and is left as it was", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const file = path.join(dir, "s1.json")
        fs.writeFileSync(file, "not json at all")
        assert.strictEqual(
          yield* loadError(store, "s1"),
          `SessionStore.load: session s1 at ${file}: not a session snapshot (Unexpected token 'o', "not json at all" is not valid JSON)`
        )
        assert.strictEqual(fs.readFileSync(file, "utf8"), "not json at all")
        yield* store.save(snapshot("s1", 2))
        const whole = fs.readFileSync(file, "utf8")
        fs.truncateSync(file, 40)
        const truncated = fs.readFileSync(file, "utf8")
        // The cut falls inside the generation id (a UUID): the string never ends.
        assert.strictEqual(
          yield* loadError(store, "s1"),
          `SessionStore.load: session s1 at ${file}: not a session snapshot (Unterminated string in JSON at position 40 (line 1 column 41))`
        )
        assert.strictEqual(fs.readFileSync(file, "utf8"), truncated)
        assert.notStrictEqual(truncated, whole)
      })
    ))

  it.live("a corrupt log line fails the load naming the file and line", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        yield* store.save(snapshot("s1", 2), { appended: 4 })
        fs.appendFileSync(path.join(dir, "s1.log"), "{\"generation\":1}\n")
        assert.strictEqual(
          yield* loadError(yield* DiskSessionStore.make({ dir }), "s1"),
          `SessionStore.load: session s1 at ${path.join(dir, "s1.log")}:2: not a session snapshot (Expected string at ["generation"])`
        )
      })
    ))

  it.live("a snapshot of a newer version fails the load naming the file, and is left as it was", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const file = path.join(dir, "s1.json")
        const newer = JSON.stringify({ generation: "g", snapshot: { ...snapshot("s1", 1), version: 3 } })
        fs.writeFileSync(file, newer)
        assert.strictEqual(
          yield* loadError(store, "s1"),
          `SessionStore.load: session s1 at ${file}: snapshot version 3 is newer than this Condukt reads (2); upgrade to resume it`
        )
        assert.strictEqual(fs.readFileSync(file, "utf8"), newer)
      })
    ))

  it.live("a read-only store directory fails the save naming the path, and the snapshot there is left as it was", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        yield* store.save(snapshot("s1", 1))
        const before = fs.readFileSync(path.join(dir, "s1.json"), "utf8")
        yield* readOnly(dir)
        const error = yield* storeError(store.save(snapshot("s1", 2)))
        assert.strictEqual(error?.reason._tag, "Unavailable")
        // The save stops at its first step: taking the session's lock file.
        assert.strictEqual(error?.location, path.join(dir, "s1.lock"))
        assert.isTrue(error?.message.startsWith(`SessionStore.save: session s1 at ${path.join(dir, "s1.lock")}: E`))
        assert.strictEqual(fs.readFileSync(path.join(dir, "s1.json"), "utf8"), before)
        assert.deepStrictEqual(fs.readdirSync(dir), ["s1.json"])
      })
    ))

  it.live("each id has files of its own in the directory, spelled from its UTF-8 bytes; a long one's name is cut and ends with its SHA-256", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const ids = ["../escape", "a/b", ".hidden", "Alice", "%41", "e\u0301", "\u00E9", "a.json", "x".repeat(200), "x".repeat(201)]
        for (const id of ids) yield* store.save(snapshot(id, 1))
        const hashed = `${"x".repeat(100)}~${createHash("sha256").update("x".repeat(201)).digest("hex")}`
        assert.deepStrictEqual(ids.map(DiskSessionStore.fileName), [
          "%2E.%2Fescape",
          "a%2Fb",
          "%2Ehidden",
          "%41lice",
          "%2541",
          "e%CC%81",
          "%C3%A9",
          "a.json",
          "x".repeat(200),
          hashed
        ])
        assert.deepStrictEqual(fs.readdirSync(dir).sort(), ids.map((id) => `${DiskSessionStore.fileName(id)}.json`).sort())
        assert.isFalse(fs.existsSync(path.join(path.dirname(dir), "escape.json")))
        // The longest name an id gets, with the longest extension, fits a file name's 255 bytes.
        assert.strictEqual(`${DiskSessionStore.fileName("\u{1F600}".repeat(127))}.json.tmp`.length, 174)
      })
    ))

  it.live("a session's files of Condukt 0.1.0, named by the id as it is, move to the id's name at its first load; a file holding another session's snapshot is not read as this one's", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        // 0.1.0 named files by the id: `Ticket-42.json` and its log, written here under today's name and renamed.
        yield* store.save(snapshot("Ticket-42", 1))
        yield* store.save(snapshot("Ticket-42", 2), { appended: 4 })
        for (const extension of [".json", ".log"]) fs.renameSync(path.join(dir, `%54icket-42${extension}`), path.join(dir, `Ticket-42${extension}`))
        const reopened = yield* DiskSessionStore.make({ dir })
        assert.deepStrictEqual(yield* reopened.load("Ticket-42"), Option.some(snapshot("Ticket-42", 2)))
        assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["%54icket-42.json", "%54icket-42.log"])
        yield* reopened.save(snapshot("Ticket-42", 3), { appended: 4 })
        assert.deepStrictEqual(yield* (yield* DiskSessionStore.make({ dir })).load("Ticket-42"), Option.some(snapshot("Ticket-42", 3)))
        // Where case folds, `Alice.json` of 0.1.0 is `alice.json`: alice does not read Alice's history, nor Alice alice's.
        yield* store.save(snapshot("Alice", 1))
        fs.renameSync(path.join(dir, "%41lice.json"), path.join(dir, "alice.json"))
        assert.strictEqual(
          yield* loadError(reopened, "alice"),
          `SessionStore.load: session alice at ${path.join(dir, "alice.json")}: not a session snapshot (it holds the snapshot of session Alice)`
        )
        yield* store.save(snapshot("bob", 1))
        fs.renameSync(path.join(dir, "bob.json"), path.join(dir, "Bob.json"))
        assert.isTrue(Option.isNone(yield* reopened.load("Bob")))
        assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["%54icket-42.json", "%54icket-42.log", "Bob.json", "alice.json"])
      })
    ))

  it.live("a save another writer got to first fails with Conflict naming what changed, and overwrites nothing", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const file = path.join(dir, "s1.json")
        const log = path.join(dir, "s1.log")
        yield* store.save(snapshot("s1", 1))
        // Another process resumes the session and saves a turn.
        const other = yield* DiskSessionStore.make({ dir })
        assert.deepStrictEqual(yield* other.load("s1"), Option.some(snapshot("s1", 1)))
        yield* other.save(snapshot("s1", 2), { appended: 4 })
        const size = fs.statSync(log).size
        const mine = { ...snapshot("s1", 2), assigns: { mine: true } }
        const error = yield* storeError(store.save(mine, { appended: 4 }))
        assert.strictEqual(error?.reason._tag, "Conflict")
        assert.strictEqual(error?.message, conflict(file, `${log} has ${size} bytes, 0 when last loaded or saved here`))
        // A rewrite (what follows a failed save) is refused the same way.
        assert.strictEqual((yield* storeError(store.save(mine)))?.message, conflict(file, `${log} has ${size} bytes, 0 when last loaded or saved here`))
        assert.deepStrictEqual(yield* (yield* DiskSessionStore.make({ dir })).load("s1"), Option.some(snapshot("s1", 2)))
        // The other writer compacts: its new snapshot file is another generation.
        yield* other.save(snapshot("s1", 3))
        assert.strictEqual((yield* storeError(store.save(mine)))?.message, conflict(file, `${file} was rewritten`))
        // Loading again reads what the other writer saved; saving from there works.
        assert.deepStrictEqual(yield* store.load("s1"), Option.some(snapshot("s1", 3)))
        yield* store.save(snapshot("s1", 4), { appended: 4 })
        assert.strictEqual((yield* storeError(other.save(snapshot("s1", 4), { appended: 4 })))?.reason._tag, "Conflict")
        assert.deepStrictEqual(yield* (yield* DiskSessionStore.make({ dir })).load("s1"), Option.some(snapshot("s1", 4)))
        assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["s1.json", "s1.log"])
      })
    ))

  it.live("two writers starting the same new session: the second save is a Conflict, and so is a save after a clear elsewhere", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const file = path.join(dir, "s1.json")
        const other = yield* DiskSessionStore.make({ dir })
        assert.isTrue(Option.isNone(yield* store.load("s1")))
        assert.isTrue(Option.isNone(yield* other.load("s1")))
        yield* other.save(snapshot("s1", 1))
        const created = yield* storeError(store.save(snapshot("s1", 1, { assigns: { mine: true } })))
        assert.strictEqual(created?.message, conflict(file, `${file} was created`))
        yield* store.clear("s1")
        const removed = yield* storeError(other.save(snapshot("s1", 2), { appended: 4 }))
        assert.strictEqual(removed?.message, conflict(file, `${file} was removed`))
        assert.deepStrictEqual(fs.readdirSync(dir), [])
      })
    ))

  it.live("two processes saving one session at once: one saves, the other fails with Conflict; the store holds the winner's turn", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const seed = snapshot("shared", 1)
        yield* store.save(seed)
        const outcomes = yield* twoWriters("disk", dir, "shared")
        const winner = winnerOf(outcomes)
        const log = path.join(dir, "shared.log")
        assert.deepStrictEqual(outcomes[1 - winner], {
          reason: "Conflict",
          message: conflict(path.join(dir, "shared.json"), `${log} has ${fs.statSync(log).size} bytes, 0 when last loaded or saved here`, "shared")
        })
        assert.deepStrictEqual(
          yield* (yield* DiskSessionStore.make({ dir })).load("shared"),
          Option.some({ ...seed, messages: [...seed.messages, ...writerTurn(writerNames[winner])], updatedAt: seed.updatedAt + 1 })
        )
      })
    ), 20_000)

  it.live("a lock file left by a process that died mid-save is removed once stale; a fresh one fails the save naming it", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const lock = path.join(dir, "s1.lock")
        fs.writeFileSync(lock, "")
        // Last modified in 1970: far older than STALE_LOCK_MS.
        fs.utimesSync(lock, 0, 0)
        yield* store.save(snapshot("s1", 1))
        assert.deepStrictEqual(fs.readdirSync(dir), ["s1.json"])
        fs.writeFileSync(lock, "")
        const error = yield* storeError(store.save(snapshot("s1", 2), { appended: 4 }))
        assert.strictEqual(
          error?.message,
          `SessionStore.save: session s1 at ${lock}: another save of this session holds ${lock}; if no process is saving it, remove the file`
        )
        fs.rmSync(lock)
        yield* store.save(snapshot("s1", 2), { appended: 4 })
        assert.deepStrictEqual(yield* (yield* DiskSessionStore.make({ dir })).load("s1"), Option.some(snapshot("s1", 2)))
      })
    ))

  it.live("assigns JSON cannot hold fail the save with the path, and nothing is written", () =>
    withStore((store, dir) =>
      Effect.gen(function*() {
        const error = yield* storeError(store.save(snapshot("s1", 1, { assigns: { big: 1n } })))
        assert.strictEqual(
          error?.message,
          `SessionStore.save: session s1 at ${path.join(dir, "s1.json")}: not a session snapshot (it cannot be written as JSON: Do not know how to serialize a BigInt)`
        )
        assert.deepStrictEqual(fs.readdirSync(dir), [])
      })
    ))
})
