/**
 * DiskSessionStore — session snapshots as files in one directory, exported as `DiskSessionStore`.
 *
 * A session `s` has a snapshot file `s.json` and an append log `s.log`. A save that only adds
 * messages (a turn, or a tool call's start with its batch) appends one JSON line to the log and fsyncs it, so its cost follows the turn,
 * not the history; when the log has grown past the snapshot (and past `MIN_REWRITE_BYTES`), or
 * the history was rewritten (a compaction), the save writes a new snapshot file instead: a temp
 * file, fsync, rename, fsync of the directory, then the log is removed. The snapshot file names
 * a generation and each log line carries the generation it extends, so a crash between the rename
 * and the log's removal leaves lines a load skips. A log line without its newline is an append a
 * crash cut short: it never completed, so a load ignores it (and the next save rewrites).
 *
 * A session id is held to the one rule for ids (`SessionId`: an id it refuses fails with
 * `InvalidSessionId` before any file is touched), and every id it takes has files of its own,
 * named by spelling its bytes (`fileName`: `Alice` is `%41lice`, `../x` is `%2E.%2Fx`), so no name
 * leaves the directory and two ids never share one, even where the file system folds case; a load
 * checks that the snapshot it read is the id's. A file of Condukt 0.1.0, named by the id as
 * written, is moved to the id's name when the id's first load, save or clear finds it
 * (docs/decisions/0078). A file that is not a snapshot fails the load with
 * `Corrupt` naming it (and its line, for the log); nothing is ever overwritten by a load, and a
 * session refused at start writes nothing. A save's JSON is made before any file is opened, within
 * `JsonLimits.stored` (what a load reads back): a snapshot JSON cannot hold fails its save with
 * `Corrupt` and leaves the files as they were.
 *
 * Several processes may hold the same session: a save first takes the session's lock file `s.lock`
 * (created exclusively; a lock another save holds is waited for, 20 ms apart, `BUSY_RETRIES`
 * times; one older than `STALE_LOCK_MS`, left by a process that died mid-save, is removed), then
 * checks that the files are still what this store last loaded or saved (the snapshot file's
 * generation and the log's length in bytes). If another writer saved since, the save fails with
 * `Conflict` and writes nothing. A load takes no lock: a save never makes a half-written state
 * visible to it.
 *
 * Its approval log keeps one JSON file per record, `.approvals/<id>.json` (internal/diskApprovals.ts):
 * a save writes its batch's records before its snapshot, and `list` scans the files, reading
 * them in id order until a page is full: fine for the approvals a person answers, slow for many
 * thousands an audit filters; the SQLite store is the one for those.
 */
import { Clock, Effect, FileSystem, Layer, Option, Path, type PlatformError, Result, Schema } from "effect"
import * as uuid7 from "@condukt/core/Uuid7"
import * as JsonLimits from "@condukt/core/JsonLimits"
import { Message } from "@condukt/core/Message"
import {
  Conflict,
  Corrupt,
  type SaveOptions,
  SessionStore,
  SessionStoreError,
  type Service,
  Unavailable,
  unreadable,
  unwritable,
  validId
} from "@condukt/core/SessionStore"
import { show } from "@condukt/core/SessionId"
import * as Snapshot from "@condukt/core/Snapshot"
import * as ApprovalRows from "../internal/approvalRows.ts"
import * as DiskApprovals from "../internal/diskApprovals.ts"
import { fileName, legacyName } from "../internal/sessionFileName.ts"

/**
 * The name of a session's files for its id, without their extension, and the longest name spelled
 * in full (a longer one is cut, with the id's SHA-256).
 *
 * @since 0.1.0
 * @category combinators
 */
export { fileName, MAX_NAME } from "../internal/sessionFileName.ts"

/** @since 0.1.0 @category models */
export interface Options {
  /** The directory holding the sessions' files; created on the first save. */
  readonly dir: string
  /** How long answered approval records are kept (ms; default: for ever). */
  readonly approvalRetention?: number | undefined
}

/** Below this size a log is never folded into the snapshot file: small rewrites are not worth it. */
export const MIN_REWRITE_BYTES = 64 * 1024

/** How often a save retries a session's lock file another save holds, 20 ms apart. */
export const BUSY_RETRIES = 100

/**
 * A lock file older than this was left by a process that died mid-save (a save holds it for the
 * time of one write and fsync), and is removed.
 */
export const STALE_LOCK_MS = 30_000

/** The snapshot file's first bytes hold its generation: `{"generation":"<uuid7>",…`. */
const HEAD_BYTES = 64
const HEAD = /^\{"generation":"([^"]*)"/

const Wrapper = Schema.Struct({ generation: Schema.String, snapshot: Schema.Unknown })

/**
 * `JsonLimits.stored` holds for the snapshot: the file wraps it one level down (an envelope of
 * one); a log line nests its messages and assigns as the snapshot does (none).
 */
const FILE_ENVELOPE = 1

const LogEntry = Schema.Struct({
  generation: Schema.String,
  /** The index of the first message this line adds. */
  from: Schema.Int,
  messages: Schema.Array(Message),
  assigns: Schema.Record(Schema.String, Schema.Unknown),
  updatedAt: Schema.Int,
  /** The batch of calls running or waiting when the line was written; a line without one ends it. */
  batch: Schema.optionalKey(Snapshot.Batch)
})

/** What this store last wrote for a session, so the next save can append. */
interface Written {
  readonly generation: string
  readonly snapshotBytes: number
  logBytes: number
  length: number
}

/**
 * What a session's files are, as far as a concurrent writer matters: the snapshot file's
 * generation and the log's length in bytes, or `absent` when there is no snapshot file.
 */
type Revision = { readonly generation: string; readonly logBytes: number } | "absent"

const sameRevision = (a: Revision, b: Revision) =>
  a === "absent" || b === "absent" ? a === b : a.generation === b.generation && a.logBytes === b.logBytes

/** What changed between the revision a store expected and the one it found, for `Conflict`. */
const changed = (expected: Revision, found: Revision, files: { readonly snapshot: string; readonly log: string }): string => {
  if (found === "absent") return `${files.snapshot} was removed`
  if (expected === "absent") return `${files.snapshot} was created`
  if (found.generation !== expected.generation) return `${files.snapshot} was rewritten`
  return `${files.log} has ${found.logBytes} bytes, ${expected.logBytes} when last loaded or saved here`
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()


/** What `snapshotIdIn` gives for a snapshot of version 1 that names no id: it is the file's. */
const NO_ID = Symbol("NoId")

/** The session id a snapshot file's bytes name; `undefined` when they are no snapshot file. */
const snapshotIdIn = (bytes: Uint8Array): string | typeof NO_ID | undefined => {
  const value = JsonLimits.parse(decoder.decode(bytes), JsonLimits.stored, FILE_ENVELOPE)
  const wrapper = Result.isSuccess(value) ? Schema.decodeUnknownResult(Wrapper)(value.success) : undefined
  if (wrapper === undefined || Result.isFailure(wrapper)) return undefined
  const snapshot = wrapper.success.snapshot
  if (typeof snapshot !== "object" || snapshot === null || !("id" in snapshot)) return NO_ID
  return typeof snapshot.id === "string" ? snapshot.id : undefined
}

const describe = (error: PlatformError.PlatformError): string => {
  const cause = error.reason.cause
  return cause instanceof Error ? cause.message : error.message
}

/**
 * A store in `options.dir`, using the provided FileSystem and Path.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("DiskSessionStore.make")(function*(options: Options) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const dir = path.resolve(options.dir)
  const written = new Map<string, Written>()
  /** The revision this store last loaded or saved per session; a session it never saw is not checked. */
  const expected = new Map<string, Revision>()
  const approvals = yield* DiskApprovals.make({ dir, retention: options.approvalRetention, busyRetries: BUSY_RETRIES, staleLockMs: STALE_LOCK_MS })
  const approvalFile = (record: string | undefined) => path.join(dir, ".approvals", record === undefined ? "" : `${record}.json`)

  const files = (id: string) => {
    const name = fileName(id)
    return { snapshot: path.join(dir, `${name}.json`), log: path.join(dir, `${name}.log`), lock: path.join(dir, `${name}.lock`) }
  }

  const fail = (method: SessionStoreError["method"], sessionId: string, location: string) =>
  (reason: SessionStoreError["reason"], cause?: unknown) =>
    new SessionStoreError({ method, sessionId, location, reason, ...(cause === undefined ? {} : { cause }) })

  const unavailable = (method: SessionStoreError["method"], sessionId: string, location: string) =>
    Effect.mapError((error: PlatformError.PlatformError) =>
      fail(method, sessionId, location)(new Unavailable({ description: describe(error) }), error)
    )

  /**
   * Moves the files Condukt 0.1.0 named by the id as it is (`Alice.json`) to the id's name, when
   * there is no snapshot file under that name and the old one holds this id's snapshot (on a file
   * system that folds case, `Alice.json` may be alice's). The log first: a crash between the two
   * leaves the old snapshot file for the next call to move, and the log's lines name its generation.
   */
  const moveLegacy = (method: SessionStoreError["method"], id: string) => {
    const legacy = legacyName(id)
    if (legacy === undefined) return Effect.void
    const now = files(id)
    const old = { snapshot: path.join(dir, `${legacy}.json`), log: path.join(dir, `${legacy}.log`) }
    const moved = (from: string, to: string) => Effect.catchReason(fs.rename(from, to), "PlatformError", "NotFound", () => Effect.void)
    return Effect.gen(function*() {
      if (yield* fs.exists(now.snapshot)) return
      const bytes = yield* Effect.catchReason(fs.readFile(old.snapshot), "PlatformError", "NotFound", () => Effect.succeed(undefined))
      const owner = bytes === undefined ? undefined : snapshotIdIn(bytes)
      if (owner === undefined || (owner !== id && owner !== NO_ID)) return
      yield* moved(old.log, now.log)
      yield* moved(old.snapshot, now.snapshot)
    }).pipe(unavailable(method, id, old.snapshot))
  }

  /** Holds the id to the one rule, and moves its files of Condukt 0.1.0 to its name. */
  const checked = (method: SessionStoreError["method"], id: string) => Effect.andThen(validId(method, id, dir), moveLegacy(method, id))

  /** The file's bytes, `undefined` when there is none. */
  const readIfExists = (file: string, id: string) =>
    fs.readFile(file).pipe(
      Effect.map((bytes): Uint8Array | undefined => bytes),
      Effect.catchReason("PlatformError", "NotFound", () => Effect.succeed(undefined)),
      unavailable("load", id, file)
    )

  /** The session's revision on disk: the snapshot file's head and the log's size. */
  const revisionOf = (method: SessionStoreError["method"], id: string) => {
    const { log, snapshot: file } = files(id)
    const head = Effect.scoped(Effect.flatMap(fs.open(file, { flag: "r" }), (handle) => handle.readAlloc(HEAD_BYTES))).pipe(
      Effect.map(Option.map((bytes) => HEAD.exec(decoder.decode(bytes))?.[1] ?? "")),
      Effect.catchReason("PlatformError", "NotFound", () => Effect.succeed(Option.none<string>())),
      unavailable(method, id, file)
    )
    const logBytes = fs.stat(log).pipe(
      Effect.map((info) => Number(info.size)),
      Effect.catchReason("PlatformError", "NotFound", () => Effect.succeed(0)),
      unavailable(method, id, log)
    )
    return Effect.flatMap(head, (generation): Effect.Effect<Revision, SessionStoreError> =>
      Option.isNone(generation)
        ? Effect.succeed("absent")
        : Effect.map(logBytes, (size) => ({ generation: generation.value, logBytes: size })))
  }

  /** Creates the lock file, or tells that it exists (after removing it when it is stale). */
  const tryLock = (method: SessionStoreError["method"], id: string): Effect.Effect<boolean, SessionStoreError> => {
    const { lock } = files(id)
    const create = fs.writeFile(lock, new Uint8Array(0), { flag: "wx" })
    const breakIfStale = Effect.gen(function*() {
      const info = yield* fs.stat(lock)
      const now = yield* Clock.currentTimeMillis
      if (Option.isSome(info.mtime) && now - info.mtime.value.getTime() > STALE_LOCK_MS) yield* fs.remove(lock, { force: true })
    }).pipe(Effect.ignore)
    return create.pipe(
      // The store's directory is made on the first save.
      Effect.catchReason("PlatformError", "NotFound", () => Effect.andThen(fs.makeDirectory(dir, { recursive: true }), create)),
      Effect.as(true),
      Effect.catchReason("PlatformError", "AlreadyExists", () => Effect.as(breakIfStale, false)),
      unavailable(method, id, lock)
    )
  }

  const lockFor = (method: SessionStoreError["method"], id: string, attempt = 0): Effect.Effect<void, SessionStoreError> =>
    Effect.flatMap(tryLock(method, id), (locked) => {
      if (locked) return Effect.void
      if (attempt >= BUSY_RETRIES) {
        const description = `another save of this session holds ${files(id).lock}; if no process is saving it, remove the file`
        return Effect.fail(fail(method, id, files(id).lock)(new Unavailable({ description })))
      }
      return Effect.andThen(Effect.sleep("20 millis"), lockFor(method, id, attempt + 1))
    })

  /** Runs `f` holding the session's lock file. */
  const locked = <A>(method: SessionStoreError["method"], id: string, f: Effect.Effect<A, SessionStoreError>) =>
    Effect.acquireUseRelease(lockFor(method, id), () => f, () => Effect.ignore(fs.remove(files(id).lock)))

  /**
   * After a write that failed under the lock, what is on disk is this store's own doing: the
   * expected revision becomes what is there (unknown, when even that cannot be read).
   */
  const afterFailedWrite = (method: SessionStoreError["method"], id: string) =>
    revisionOf(method, id).pipe(
      Effect.tap((found) => Effect.sync(() => expected.set(id, found))),
      Effect.catch(() => Effect.sync(() => expected.delete(id)))
    )

  /** Writes `bytes` to `file` and waits until they are on the disk. */
  const writeSynced = (file: string, bytes: Uint8Array, flag: "w" | "a") =>
    Effect.scoped(Effect.gen(function*() {
      const handle = yield* fs.open(file, { flag })
      yield* handle.writeAll(bytes)
      yield* handle.sync
    }))

  const syncDirectory = Effect.scoped(Effect.flatMap(fs.open(dir, { flag: "r" }), (handle) => handle.sync))

  /**
   * The value as JSON bytes, made before any file is opened; a value JSON cannot hold (a BigInt, a
   * cycle in the assigns) or that a load would refuse (nested past `JsonLimits.stored`) is refused.
   */
  const encode = (value: unknown, id: string, location: string, envelope: number, suffix = "") => {
    const text = JsonLimits.stringify(value, JsonLimits.stored, envelope)
    return Result.isSuccess(text)
      ? Effect.succeed(encoder.encode(`${text.success}${suffix}`))
      : Effect.fail(fail("save", id, location)(unwritable(text.failure), text.failure))
  }

  /** The JSON of a file or a log line, within `JsonLimits.stored` (what a save writes). */
  const parse = (text: string, location: string, id: string, envelope: number) => {
    const value = JsonLimits.parse(text, JsonLimits.stored, envelope)
    return Result.isSuccess(value) ? Effect.succeed(value.success) : Effect.fail(fail("load", id, location)(unreadable(value.failure)))
  }

  const load = Effect.fn("DiskSessionStore.load")(function*(id: string) {
    yield* checked("load", id)
    // Until a load succeeds, this store knows nothing of what is on disk.
    expected.delete(id)
    const { log, snapshot: file } = files(id)
    const bytes = yield* readIfExists(file, id)
    if (bytes === undefined) {
      expected.set(id, "absent")
      return Option.none()
    }
    const text = decoder.decode(bytes)
    const corrupt = fail("load", id, file)
    const wrapper = Schema.decodeUnknownResult(Wrapper)(yield* parse(text, file, id, FILE_ENVELOPE))
    if (Result.isFailure(wrapper)) return yield* corrupt(new Corrupt({ description: "expected { generation, snapshot }" }))
    const base = Snapshot.decode(wrapper.success.snapshot, id)
    if (Result.isFailure(base)) return yield* corrupt(base.failure)
    // Never another session's history: a file of 0.1.0 named `Alice.json` is `alice.json` where case folds.
    if (base.success.id !== id) return yield* corrupt(new Corrupt({ description: `it holds the snapshot of session ${show(base.success.id)}` }))
    const generation = wrapper.success.generation
    const messages = [...base.success.messages]
    let { assigns, batch, updatedAt } = base.success
    const logBytes = (yield* readIfExists(log, id)) ?? new Uint8Array(0)
    const logText = decoder.decode(logBytes)
    const lines = logText.split("\n")
    // The text after the last newline is an append that never completed.
    const torn = lines.pop() !== ""
    for (let i = 0; i < lines.length; i++) {
      const at = `${log}:${i + 1}`
      const entry = Schema.decodeUnknownResult(LogEntry)(yield* parse(lines[i]!, at, id, 0))
      if (Result.isFailure(entry)) return yield* fail("load", id, at)(new Corrupt({ description: entry.failure.message.replace(/\s*\n\s*/g, " ") }))
      if (entry.success.generation !== generation) continue
      if (entry.success.from !== messages.length) {
        return yield* fail("load", id, at)(
          new Corrupt({ description: `the line adds messages from ${entry.success.from}, but the history has ${messages.length}` })
        )
      }
      messages.push(...entry.success.messages)
      assigns = entry.success.assigns
      updatedAt = entry.success.updatedAt
      batch = entry.success.batch
    }
    // After a torn append the log must not grow: the next save rewrites.
    if (torn) written.delete(id)
    else written.set(id, { generation, snapshotBytes: bytes.length, logBytes: logBytes.length, length: messages.length })
    expected.set(id, { generation, logBytes: logBytes.length })
    const { batch: _, ...rest } = base.success
    return Option.some({ ...rest, messages, assigns, updatedAt, ...(batch === undefined ? {} : { batch }) })
  })

  const append = (id: string, snapshot: Snapshot.Snapshot, appended: number, last: Written, logBytes: number) => {
    const { log } = files(id)
    const line = {
      generation: last.generation,
      from: last.length,
      messages: snapshot.messages.slice(snapshot.messages.length - appended),
      assigns: snapshot.assigns,
      updatedAt: snapshot.updatedAt,
      ...(snapshot.batch === undefined ? {} : { batch: snapshot.batch })
    }
    // Messages are plain data whose encoded form is the value itself: no Schema pass on the hot path.
    return Effect.flatMap(encode(line, id, log, 0, "\n"), (bytes) =>
      writeSynced(log, bytes, "a").pipe(
        unavailable("save", id, log),
        Effect.tap(() =>
          Effect.sync(() => {
            last.logBytes += bytes.length
            last.length = snapshot.messages.length
            expected.set(id, { generation: last.generation, logBytes: logBytes + bytes.length })
          })
        )
      ))
  }

  const rewrite = (id: string, snapshot: Snapshot.Snapshot) =>
    Effect.gen(function*() {
      const { log, snapshot: file } = files(id)
      const generation = yield* uuid7.make
      const bytes = yield* encode({ generation, snapshot }, id, file, FILE_ENVELOPE)
      const temp = `${file}.tmp`
      yield* writeSynced(temp, bytes, "w").pipe(
        unavailable("save", id, temp),
        Effect.tapError(() => Effect.ignore(fs.remove(temp, { force: true })))
      )
      yield* fs.rename(temp, file).pipe(unavailable("save", id, file))
      yield* syncDirectory.pipe(unavailable("save", id, dir))
      // Lines of the previous generation would be skipped anyway; removing them keeps loads short.
      yield* fs.remove(log, { force: true }).pipe(unavailable("save", id, log))
      written.set(id, { generation, snapshotBytes: bytes.length, logBytes: 0, length: snapshot.messages.length })
      expected.set(id, { generation, logBytes: 0 })
    })

  /** Fails with `Conflict` when another writer saved the session since this store last saw it. */
  const checkRevision = (id: string) =>
    Effect.flatMap(revisionOf("save", id), (found) => {
      const want = expected.get(id)
      if (want === undefined || sameRevision(want, found)) return Effect.succeed(found)
      return Effect.fail(fail("save", id, files(id).snapshot)(new Conflict({ description: changed(want, found, files(id)) })))
    })

  const save = Effect.fn("DiskSessionStore.save")(function*(snapshot: Snapshot.Snapshot, saveOptions?: SaveOptions) {
    const id = snapshot.id
    yield* checked("save", id)
    const records = yield* Effect.fromResult(ApprovalRows.encode(snapshot.batch?.approvals, "save", id, approvalFile))
    yield* locked("save", id, Effect.gen(function*() {
      const found = yield* checkRevision(id)
      // The batch's approval records before the snapshot that holds them: a crash between the two
      // leaves records the session never saved, open in the log with no session waiting (the
      // restarted run asks again under new ids; a deadline closes them), never a session waiting
      // on a request the log does not show.
      yield* approvals.index("save", id, records)
      const last = written.get(id)
      const appended = saveOptions?.appended
      const canAppend = appended !== undefined && last !== undefined && found !== "absent" &&
        found.generation === last.generation &&
        last.length === snapshot.messages.length - appended &&
        last.logBytes <= Math.max(last.snapshotBytes, MIN_REWRITE_BYTES)
      // Until a save succeeds, what is on disk is unknown: the next save starts from a rewrite.
      written.delete(id)
      if (canAppend) {
        yield* Effect.tapError(append(id, snapshot, appended, last, found.logBytes), () => afterFailedWrite("save", id))
        written.set(id, last)
      } else {
        yield* Effect.tapError(rewrite(id, snapshot), () => afterFailedWrite("save", id))
      }
    }))
  })

  const clear = Effect.fn("DiskSessionStore.clear")(function*(id: string) {
    yield* checked("clear", id)
    written.delete(id)
    const { log, snapshot: file } = files(id)
    yield* locked("clear", id, Effect.gen(function*() {
      yield* fs.remove(file, { force: true }).pipe(unavailable("clear", id, file))
      yield* fs.remove(log, { force: true }).pipe(unavailable("clear", id, log))
      expected.set(id, "absent")
    }).pipe(Effect.tapError(() => afterFailedWrite("clear", id))))
  })

  const release = (id: string) =>
    Effect.sync(() => {
      written.delete(id)
      expected.delete(id)
    })

  return SessionStore.of({ load, save, clear, release, approvals: approvals.log } satisfies Service)
})

/**
 * A `SessionStore` keeping each session in files under `options.dir`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SessionStore, never, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(SessionStore, make(options))
