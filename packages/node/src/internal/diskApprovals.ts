/**
 * diskApprovals — the disk store's approval log (`ApprovalLog.Service`): one JSON file per record,
 * `<dir>/.approvals/<id>.json` (a session's files never start with a dot, so none is in the way),
 * the id held to `ApprovalLog.isKeptId` first, so a hostile one never becomes a path.
 *
 * A save indexes its batch's records before its snapshot is written (`index`), `put` the records
 * no save carries: each record whose file differs is written atomically (a temp file, fsync,
 * rename), then the directory is fsynced once. A record answered on disk is never reopened by a
 * save or a put that still has it open.
 *
 * `list` scans: it reads the directory's names (ids, so in id order), and from the cursor on reads
 * one file after another until the page and one more are found. Paging through open requests
 * reads about each file once; a filter few records pass reads many per page. The SQLite store is
 * the one for many approvals.
 *
 * Writes (a save's or a put's index, an answer, the retention's deletes) hold the log's lock: a
 * semaphore in this process, and the lock file `.approvals/.lock`, created exclusively, for other
 * processes (a lock another holds is waited for, 20 ms apart; one older than the stale age, left
 * by a process that died holding it, is removed). So two answers, in one process or in two on one local file
 * system, never both win: the second reads the first's answer and is refused. A process stalled
 * with the lock past the stale age loses that guarantee, as the session's own lock does; a file
 * system without exclusive creation (old NFS) never had it.
 */
import { Clock, Effect, FileSystem, Option, Path, type PlatformError, Result, Semaphore } from "effect"
import * as ApprovalLog from "@condukt/core/ApprovalLog"
import * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import { type SessionStoreError, Unavailable } from "@condukt/core/SessionStoreError"
import * as ApprovalRows from "./approvalRows.ts"

/** How often, at most, a store's saves delete answered records past their retention (each read to know). */
export const PRUNE_EVERY_MS = 60_000

/** What the log takes from its store. */
export interface Options {
  /** The store's directory; the log's is `.approvals` in it. */
  readonly dir: string
  /** How long answered records are kept (ms; default: for ever). */
  readonly retention?: number | undefined
  /** How often a write retries a lock another process holds, 20 ms apart. */
  readonly busyRetries: number
  /** The age past which a lock file is a dead process's, and removed. */
  readonly staleLockMs: number
}

const SUFFIX = ".json"

/** How many of a save's record files are written at once. */
const WRITERS = 8

const describe = (error: PlatformError.PlatformError): string => {
  const cause = error.reason.cause
  return cause instanceof Error ? cause.message : error.message
}

/** The approval log in `options.dir`, and `index`, what the store's save calls with its records. */
export const make = Effect.fnUntraced(function*(options: Options) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const home = path.join(options.dir, ".approvals")
  const lockFile = path.join(home, ".lock")
  const fileOf = (id: string) => path.join(home, `${id}${SUFFIX}`)
  const semaphore = yield* Semaphore.make(1)
  /** When this store's saves last deleted answered records (its first save does). */
  let pruned = -Infinity

  const unavailable = (method: SessionStoreError["method"], location: string, sessionId = "") =>
    Effect.mapError((error: PlatformError.PlatformError) =>
      ApprovalRows.failure(method, location, new Unavailable({ description: describe(error) }), error, sessionId)
    )

  /** The file's text, `undefined` when there is none. */
  const readIfExists = (file: string) =>
    fs.readFileString(file).pipe(
      Effect.map((text): string | undefined => text),
      Effect.catchReason("PlatformError", "NotFound", () => Effect.succeed(undefined))
    )

  /** Creates the lock file, or tells that it exists (after removing it when it is stale). */
  const tryLock = Effect.gen(function*() {
    const create = fs.writeFile(lockFile, new Uint8Array(0), { flag: "wx" })
    const breakIfStale = Effect.gen(function*() {
      const info = yield* fs.stat(lockFile)
      const now = yield* Clock.currentTimeMillis
      if (Option.isSome(info.mtime) && now - info.mtime.value.getTime() > options.staleLockMs) yield* fs.remove(lockFile, { force: true })
    }).pipe(Effect.ignore)
    return yield* create.pipe(
      Effect.catchReason("PlatformError", "NotFound", () => Effect.andThen(fs.makeDirectory(home, { recursive: true }), create)),
      Effect.as(true),
      Effect.catchReason("PlatformError", "AlreadyExists", () => Effect.as(breakIfStale, false))
    )
  })

  const lock = (method: SessionStoreError["method"], attempt = 0): Effect.Effect<void, SessionStoreError> =>
    Effect.flatMap(unavailable(method, lockFile)(tryLock), (locked) => {
      if (locked) return Effect.void
      if (attempt >= options.busyRetries) {
        const description = `another process holds ${lockFile}; if none is writing approvals, remove the file`
        return Effect.fail(ApprovalRows.failure(method, lockFile, new Unavailable({ description })))
      }
      return Effect.andThen(Effect.sleep("20 millis"), lock(method, attempt + 1))
    })

  /** Runs `f` holding the log's lock, in this process and across processes. */
  const locked = <A, E>(method: SessionStoreError["method"], f: Effect.Effect<A, E>) =>
    semaphore.withPermits(1)(Effect.acquireUseRelease(lock(method), () => f, () => Effect.ignore(fs.remove(lockFile))))

  /** Replaces `file` with `text`, whole: a temp file, fsync, rename (the directory's fsync is the caller's). */
  const writeAtomic = (file: string, text: string) =>
    Effect.gen(function*() {
      const temp = `${file}.tmp`
      yield* Effect.scoped(Effect.gen(function*() {
        const handle = yield* fs.open(temp, { flag: "w" })
        yield* handle.writeAll(new TextEncoder().encode(text))
        yield* handle.sync
      })).pipe(Effect.tapError(() => Effect.ignore(fs.remove(temp, { force: true }))))
      yield* fs.rename(temp, file)
    })

  const syncHome = Effect.scoped(Effect.flatMap(fs.open(home, { flag: "r" }), (handle) => handle.sync))

  /** The record in `file`, none when there is no file; `method`'s `Corrupt` when it is not one. */
  const read = (method: SessionStoreError["method"], file: string) =>
    Effect.flatMap(unavailable(method, file)(readIfExists(file)), (text) =>
      text === undefined ? Effect.succeed(undefined) : Effect.fromResult(ApprovalRows.decode(text, method, file)))

  /** Deletes the records answered before `cutoff`, reading each to know (under the lock). */
  const prune = (sessionId: string, cutoff: number) =>
    Effect.gen(function*() {
      for (const id of yield* ids("save")) {
        const file = fileOf(id)
        const text = yield* unavailable("save", file, sessionId)(readIfExists(file))
        const record = text === undefined ? undefined : ApprovalRows.decode(text, "save", file)
        // A file that is not a record is left for `list` to name.
        if (record === undefined || Result.isFailure(record)) continue
        if (record.success.answeredAt !== undefined && record.success.answeredAt < cutoff) {
          yield* unavailable("save", file, sessionId)(fs.remove(file, { force: true }))
        }
      }
    })

  /**
   * Writes the records (a save's, or a put's) whose files differ, a record answered on disk kept
   * answered (`ApprovalLog.merged`); then, for a save, deletes what retention says, when due. A
   * file that is not a record is replaced by the one indexed.
   */
  const index = (method: "save" | "put", sessionId: string, records: ReadonlyArray<ApprovalRows.Encoded>) =>
    Effect.gen(function*() {
      const now = options.retention === undefined ? 0 : yield* Clock.currentTimeMillis
      const due = method === "save" && options.retention !== undefined && now - pruned >= PRUNE_EVERY_MS
      if (records.length === 0 && !due) return
      yield* locked(method, Effect.gen(function*() {
        if (records.length > 0) yield* unavailable(method, home, sessionId)(fs.makeDirectory(home, { recursive: true }))
        // Files apart, written side by side: their fsyncs overlap.
        const wrote = yield* Effect.forEach(records, ({ body, record }) =>
          Effect.gen(function*() {
            const file = fileOf(record.id)
            const text = yield* unavailable(method, file, sessionId)(readIfExists(file))
            if (text === body) return false
            const held = text === undefined ? undefined : ApprovalRows.decode(text, method, file)
            const heldRecord = held !== undefined && Result.isSuccess(held) ? held.success : undefined
            if (ApprovalLog.merged(heldRecord, record) !== record) return false
            yield* unavailable(method, file, sessionId)(writeAtomic(file, body))
            return true
          }), { concurrency: WRITERS })
        if (wrote.includes(true)) yield* unavailable(method, home, sessionId)(syncHome)
        if (due) {
          yield* prune(sessionId, now - options.retention!)
          pruned = now
        }
      }))
    })

  /** The ids of the record files, in order; none when the log has no directory yet. */
  const ids = (method: SessionStoreError["method"]) =>
    fs.readDirectory(home).pipe(
      Effect.map((names) =>
        names.flatMap((name) => {
          const id = name.slice(0, -SUFFIX.length)
          return name.endsWith(SUFFIX) && ApprovalLog.isKeptId(id) ? [id] : []
        }).sort()
      ),
      Effect.catchReason("PlatformError", "NotFound", () => Effect.succeed([])),
      unavailable(method, home)
    )

  const list = Effect.fn("DiskSessionStore.list")(function*(filter: ApprovalLog.Filter = {}) {
    const now = filter.now ?? (yield* Clock.currentTimeMillis)
    const size = ApprovalLog.pageSize(filter)
    const records: Array<ApprovalRecord.ApprovalRecord> = []
    for (const id of ApprovalLog.inOrder(yield* ids("list"), filter)) {
      // A file removed since the directory was read (by retention) is skipped.
      const record = yield* read("list", fileOf(id))
      if (record === undefined || !ApprovalLog.matches(record, filter, now)) continue
      if (records.length === size) return { records, next: records.at(-1)!.id }
      records.push(record)
    }
    return { records }
  })

  const get = Effect.fn("DiskSessionStore.get")(function*(id: string) {
    if (!ApprovalLog.isKeptId(id)) return Option.none()
    return Option.fromNullishOr(yield* read("get", fileOf(id)))
  })

  const answer = Effect.fn("DiskSessionStore.answer")(function*(id: string, outcome: ApprovalRecord.Outcome, at: number, by?: ApprovalRecord.By) {
    if (!ApprovalLog.isKeptId(id)) return yield* new ApprovalLog.ApprovalRefused({ id, reason: "unknown" })
    const file = fileOf(id)
    return yield* locked("answer", Effect.gen(function*() {
      const record = yield* read("answer", file)
      const refused = ApprovalLog.refusal(id, record, at, outcome)
      if (refused !== undefined) return yield* refused
      const done = ApprovalRecord.answered(record!, outcome, at, by)
      yield* unavailable("answer", file)(Effect.andThen(writeAtomic(file, JSON.stringify(done)), syncHome))
      return done
    }))
  })

  const put = Effect.fn("DiskSessionStore.put")(function*(records: ReadonlyArray<ApprovalRecord.ApprovalRecord>) {
    const encoded = yield* Effect.fromResult(ApprovalRows.encode(records, "put", "", (id) => (id === undefined ? home : fileOf(id))))
    yield* index("put", "", encoded)
  })

  return { index, log: { list, get, answer, put } satisfies ApprovalLog.Service<SessionStoreError> }
})
