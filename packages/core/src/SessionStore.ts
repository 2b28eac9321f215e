/**
 * SessionStore — where session snapshots live between runs and across processes.
 *
 * A store is a snapshot cache, not a repository: it loads, saves and clears one session's
 * snapshot by id, and offers no listing or query. The Session saves after every completed turn
 * and after a compaction; most saves add a turn to a long history, so `save` says how many of the
 * snapshot's messages are new since the session's previous save (`appended`), and a store may
 * append those instead of rewriting the whole history (the disk and SQLite stores do; see
 * docs/decisions/0032). A store must never make a snapshot half-saved visible: a load sees a save
 * whole or not at all; and it must not overwrite what another process saved since it last loaded
 * or saved the session (docs/decisions/0041).
 *
 * `layerMemory` keeps snapshots in the layer's memory (tests, one process); `DiskSessionStore`
 * (one file per session) and `SqliteSessionStore` (Node's built-in `node:sqlite`) are the durable
 * backends, each in its own module.
 */
import { Context, Effect, Layer, Option } from "effect"
import * as ApprovalLog from "./ApprovalLog.ts"
import * as JsonLimits from "./JsonLimits.ts"
import type { Snapshot } from "./Snapshot.ts"
import { SessionStoreError, unwritable, validId } from "./SessionStoreError.ts"

export * from "./SessionStoreError.ts"

/** @since 0.1.0 @category models */
export interface SaveOptions {
  /**
   * How many of the snapshot's last messages are new since this session's previous save; the
   * messages before them are unchanged. Absent: the history was rewritten (a compaction) or this
   * is the session's first save.
   */
  readonly appended?: number | undefined
}

/** @since 0.1.0 @category models */
export interface Service {
  /** The session's snapshot, migrated to the current version; `None` when the store has none. */
  readonly load: (sessionId: string) => Effect.Effect<Option.Option<Snapshot>, SessionStoreError>
  /**
   * Replaces the session's snapshot, whole or not at all. A durable store fails with `Conflict`,
   * writing nothing, when another writer saved the session since this store last loaded or saved it.
   */
  readonly save: (snapshot: Snapshot, options?: SaveOptions) => Effect.Effect<void, SessionStoreError>
  /** Forgets the session; clearing one the store does not hold succeeds. */
  readonly clear: (sessionId: string) => Effect.Effect<void, SessionStoreError>
  /**
   * The store's approval log, when it keeps one (the stores of Condukt do): every save indexes its
   * batch's approval records in the same commit (docs/decisions/0088), `put` the records no save
   * carries. A store without one serves sessions whole, but no `Approvals` service.
   */
  readonly approvals?: ApprovalLog.Service<SessionStoreError> | undefined
  /**
   * Forgets what this store keeps in memory of the session (the revision its conflict check
   * expects): a session calls it when it stops, after its last save. Its next start loads it again;
   * without it a process that serves many sessions over its life keeps an entry for each.
   */
  readonly release?: ((sessionId: string) => Effect.Effect<void>) | undefined
}

/**
 * The store a session saves to when `Session.start` is given none.
 *
 * @since 0.1.0
 * @category services
 */
export class SessionStore extends Context.Service<SessionStore, Service>()("@condukt/core/SessionStore") {}

/**
 * A store in memory, for tests and single-process programs that restart sessions (a supervisor's
 * restart resumes from it).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options: {
  /** How long answered approval records are kept (ms; default: for ever). */
  readonly approvalRetention?: number | undefined
} = {}): Service => {
  // Snapshots are immutable values: keeping the reference is keeping the snapshot.
  const byId = new Map<string, Snapshot>()
  const log = ApprovalLog.make({ retention: options.approvalRetention })
  return SessionStore.of({
    // Ids are held to the one rule here too: a program tested on memory meets the refusals a durable store gives.
    load: (sessionId) => Effect.andThen(validId("load", sessionId, "memory"), Effect.sync(() => Option.fromNullishOr(byId.get(sessionId)))),
    save: (snapshot, options) =>
      Effect.andThen(validId("save", snapshot.id, "memory"), () => {
        // What a durable store could not write (JsonLimits.stored) is refused here too, the
        // snapshot before it kept: a program tested on memory meets the same failures.
        const refused = unwritableIn(snapshot, options?.appended)
        if (refused !== undefined) {
          return Effect.fail(new SessionStoreError({ method: "save", sessionId: snapshot.id, location: "memory", reason: unwritable(refused) }))
        }
        return Effect.clockWith((clock) => {
          // The batch's approval records, in the same step as the snapshot that holds them; a
          // record whose id no log keeps refuses the save, as a durable store's does.
          const approvals = snapshot.batch?.approvals
          const unkept = approvals === undefined ? undefined : log.index(approvals, clock.currentTimeMillisUnsafe())
          if (unkept !== undefined) return Effect.fail(new SessionStoreError({ method: "save", sessionId: snapshot.id, location: "memory", reason: unkept }))
          byId.set(snapshot.id, snapshot)
          return Effect.void
        })
      }),
    clear: (sessionId) => Effect.andThen(validId("clear", sessionId, "memory"), Effect.sync(() => void byId.delete(sessionId))),
    approvals: { list: log.list, get: log.get, answer: log.answer, put: log.put }
  })
}

/** Why `snapshot` breaks `JsonLimits.stored`: its fields but the messages, and the messages new since the last save. */
const unwritableIn = (snapshot: Snapshot, appended: number | undefined): JsonLimits.JsonLimitError | undefined => {
  const { messages, ...rest } = snapshot
  const fresh = appended === undefined ? messages : messages.slice(messages.length - appended)
  // Wrapped as in the snapshot, so a message nests as deep here as there.
  return JsonLimits.check(rest, JsonLimits.stored) ?? JsonLimits.check({ messages: fresh }, JsonLimits.stored)
}

/**
 * Snapshots in the layer's memory: they live as long as the layer, in this process only.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<SessionStore> = Layer.sync(SessionStore, makeMemory)
