/**
 * DiskSessionStore — session snapshots as files in one directory, exported as `DiskSessionStore`.
 *
 * A session `s` has a snapshot file `s.json` and an append log `s.log`. A save that only adds
 * messages (a turn) appends one JSON line to the log and fsyncs it, so its cost follows the turn,
 * not the history; when the log has grown past the snapshot (and past `MIN_REWRITE_BYTES`), or
 * the history was rewritten (a compaction), the save writes a new snapshot file instead: a temp
 * file, fsync, rename, fsync of the directory, then the log is removed. The snapshot file names
 * a generation and each log line carries the generation it extends, so a crash between the rename
 * and the log's removal leaves lines a load skips. A log line without its newline is an append a
 * crash cut short: it never completed, so a load ignores it (and the next save rewrites).
 *
 * Session ids become file names, so the store refuses any id that could leave its directory or
 * is not a plain name (`InvalidSessionId`). A file that is not a snapshot fails the load with
 * `Corrupt` naming it (and its line, for the log); nothing is ever overwritten by a load, and a
 * session refused at start writes nothing. One process at a time may save a given session.
 */
import { Effect, FileSystem, Layer, Option, Path, type PlatformError, Result, Schema } from "effect"
import * as uuid7 from "../internal/uuid7.ts"
import { Message } from "../Message.ts"
import {
  Corrupt,
  InvalidSessionId,
  type SaveOptions,
  SessionStore,
  SessionStoreError,
  type Service,
  Unavailable
} from "../SessionStore.ts"
import * as Snapshot from "../Snapshot.ts"

/** @since 0.1.0 @category models */
export interface Options {
  /** The directory holding the sessions' files; created on the first save. */
  readonly dir: string
}

/** The longest session id the store takes (a UUID has 36 characters). */
export const MAX_SESSION_ID_LENGTH = 128

/** Below this size a log is never folded into the snapshot file: small rewrites are not worth it. */
export const MIN_REWRITE_BYTES = 64 * 1024

const SAFE_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/

const Wrapper = Schema.Struct({ generation: Schema.String, snapshot: Schema.Unknown })

const LogEntry = Schema.Struct({
  generation: Schema.String,
  /** The index of the first message this line adds. */
  from: Schema.Int,
  messages: Schema.Array(Message),
  assigns: Schema.Record(Schema.String, Schema.Unknown),
  updatedAt: Schema.Int
})

/** What this store last wrote for a session, so the next save can append. */
interface Written {
  readonly generation: string
  readonly snapshotBytes: number
  logBytes: number
  length: number
}

const encoder = new TextEncoder()

/**
 * The id, or why it cannot name a file.
 *
 * @since 0.1.0
 * @category validation
 */
export const checkSessionId = (id: string): InvalidSessionId | undefined => {
  if (id.length === 0) return new InvalidSessionId({ description: "it is empty" })
  if (id.length > MAX_SESSION_ID_LENGTH) {
    return new InvalidSessionId({ description: `it has ${id.length} characters, more than ${MAX_SESSION_ID_LENGTH}` })
  }
  if (!SAFE_ID.test(id)) {
    return new InvalidSessionId({
      description: "only letters, digits, '.', '_' and '-' are allowed, and it must not start with '.'"
    })
  }
  return undefined
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

  const files = (id: string) => ({ snapshot: path.join(dir, `${id}.json`), log: path.join(dir, `${id}.log`) })

  const fail = (method: SessionStoreError["method"], sessionId: string, location: string) =>
  (reason: SessionStoreError["reason"], cause?: unknown) =>
    new SessionStoreError({ method, sessionId, location, reason, ...(cause === undefined ? {} : { cause }) })

  const unavailable = (method: SessionStoreError["method"], sessionId: string, location: string) =>
    Effect.mapError((error: PlatformError.PlatformError) =>
      fail(method, sessionId, location)(new Unavailable({ description: describe(error) }), error)
    )

  const validId = (method: SessionStoreError["method"], id: string) => {
    const invalid = checkSessionId(id)
    return invalid === undefined ? Effect.void : Effect.fail(fail(method, id, dir)(invalid))
  }

  /** The file's text, `undefined` when there is none. */
  const readIfExists = (file: string, id: string) =>
    fs.readFileString(file).pipe(
      Effect.map((text): string | undefined => text),
      Effect.catchReason("PlatformError", "NotFound", () => Effect.succeed(undefined)),
      unavailable("load", id, file)
    )

  /** Writes `bytes` to `file` and waits until they are on the disk. */
  const writeSynced = (file: string, bytes: Uint8Array, flag: "w" | "a") =>
    Effect.scoped(Effect.gen(function*() {
      const handle = yield* fs.open(file, { flag })
      yield* handle.writeAll(bytes)
      yield* handle.sync
    }))

  const syncDirectory = Effect.scoped(Effect.flatMap(fs.open(dir, { flag: "r" }), (handle) => handle.sync))

  /** The value as JSON bytes; a value JSON cannot hold (a BigInt, a cycle in the assigns) is refused. */
  const encode = (value: unknown, id: string, location: string, suffix = "") =>
    Effect.try({
      try: () => encoder.encode(`${JSON.stringify(value)}${suffix}`),
      catch: (cause) =>
        fail("save", id, location)(new Corrupt({ description: `it cannot be written as JSON: ${cause instanceof Error ? cause.message : "unknown value"}` }), cause)
    })

  const parse = (text: string, location: string, id: string) =>
    Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (cause) => fail("load", id, location)(new Corrupt({ description: cause instanceof Error ? cause.message : "invalid JSON" }))
    })

  const load = Effect.fn("DiskSessionStore.load")(function*(id: string) {
    yield* validId("load", id)
    const { log, snapshot: file } = files(id)
    const text = yield* readIfExists(file, id)
    if (text === undefined) return Option.none()
    const corrupt = fail("load", id, file)
    const wrapper = Schema.decodeUnknownResult(Wrapper)(yield* parse(text, file, id))
    if (Result.isFailure(wrapper)) return yield* corrupt(new Corrupt({ description: "expected { generation, snapshot }" }))
    const base = Snapshot.decode(wrapper.success.snapshot, id)
    if (Result.isFailure(base)) return yield* corrupt(base.failure)
    const generation = wrapper.success.generation
    const messages = [...base.success.messages]
    let { assigns, updatedAt } = base.success
    const logText = (yield* readIfExists(log, id)) ?? ""
    const lines = logText.split("\n")
    // The text after the last newline is an append that never completed.
    const torn = lines.pop() !== ""
    for (let i = 0; i < lines.length; i++) {
      const at = `${log}:${i + 1}`
      const entry = Schema.decodeUnknownResult(LogEntry)(yield* parse(lines[i]!, at, id))
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
    }
    // After a torn append the log must not grow: the next save rewrites.
    if (torn) written.delete(id)
    else written.set(id, { generation, snapshotBytes: text.length, logBytes: logText.length, length: messages.length })
    return Option.some({ ...base.success, messages, assigns, updatedAt })
  })

  const append = (id: string, snapshot: Snapshot.Snapshot, appended: number, last: Written) => {
    const { log } = files(id)
    const line = {
      generation: last.generation,
      from: last.length,
      messages: snapshot.messages.slice(snapshot.messages.length - appended),
      assigns: snapshot.assigns,
      updatedAt: snapshot.updatedAt
    }
    // Messages are plain data whose encoded form is the value itself: no Schema pass on the hot path.
    return Effect.flatMap(encode(line, id, log, "\n"), (bytes) =>
      writeSynced(log, bytes, "a").pipe(
        unavailable("save", id, log),
        Effect.tap(() =>
          Effect.sync(() => {
            last.logBytes += bytes.length
            last.length = snapshot.messages.length
          })
        )
      ))
  }

  const rewrite = (id: string, snapshot: Snapshot.Snapshot) =>
    Effect.gen(function*() {
      const { log, snapshot: file } = files(id)
      const generation = yield* uuid7.make
      const bytes = yield* encode({ generation, snapshot }, id, file)
      const temp = `${file}.tmp`
      yield* fs.makeDirectory(dir, { recursive: true }).pipe(unavailable("save", id, dir))
      yield* writeSynced(temp, bytes, "w").pipe(
        unavailable("save", id, temp),
        Effect.tapError(() => Effect.ignore(fs.remove(temp, { force: true })))
      )
      yield* fs.rename(temp, file).pipe(unavailable("save", id, file))
      yield* syncDirectory.pipe(unavailable("save", id, dir))
      // Lines of the previous generation would be skipped anyway; removing them keeps loads short.
      yield* fs.remove(log, { force: true }).pipe(unavailable("save", id, log))
      written.set(id, { generation, snapshotBytes: bytes.length, logBytes: 0, length: snapshot.messages.length })
    })

  const save = Effect.fn("DiskSessionStore.save")(function*(snapshot: Snapshot.Snapshot, saveOptions?: SaveOptions) {
    const id = snapshot.id
    yield* validId("save", id)
    const last = written.get(id)
    const appended = saveOptions?.appended
    const canAppend = appended !== undefined && last !== undefined &&
      last.length === snapshot.messages.length - appended &&
      last.logBytes <= Math.max(last.snapshotBytes, MIN_REWRITE_BYTES)
    // Until a save succeeds, what is on disk is unknown: the next save starts from a rewrite.
    written.delete(id)
    if (canAppend) {
      yield* append(id, snapshot, appended, last)
      written.set(id, last)
    } else {
      yield* rewrite(id, snapshot)
    }
  })

  const clear = Effect.fn("DiskSessionStore.clear")(function*(id: string) {
    yield* validId("clear", id)
    written.delete(id)
    const { log, snapshot: file } = files(id)
    yield* fs.remove(file, { force: true }).pipe(unavailable("clear", id, file))
    yield* fs.remove(log, { force: true }).pipe(unavailable("clear", id, log))
  })

  return SessionStore.of({ load, save, clear } satisfies Service)
})

/**
 * A `SessionStore` keeping each session in files under `options.dir`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SessionStore, never, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(SessionStore, make(options))
