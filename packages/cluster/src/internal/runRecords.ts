/**
 * runRecords — where a session entity's runs began, as one activation of it keeps them: the rows
 * of `condukt_cluster_runs` (sessionRows.ts) read once, the beginning of the run in progress
 * committed by the session's next save (the store's `alongside`, in the save's own transaction),
 * and the rows of settled runs deleted every `PRUNE_EVERY` runs.
 *
 * The rows are written and deleted only by the activation of the session (one runner holds it at a
 * time), here after its first read, so a run reads no row of its own.
 */
import { Effect, Option } from "effect"
import type { EntityAddress, MessageStorage, Snowflake } from "effect/cluster"
import type * as Snapshot from "@condukt/core/Snapshot"
import type * as SessionStore from "@condukt/core/SessionStore"
import type * as SqlSessionStore from "@condukt/node/sessionStore/Sql"
import type { SqlError } from "effect/sql"
import * as SessionRows from "./sessionRows.ts"

/** Every how many runs of an activation (its first included) the rows of the session's settled runs are deleted. */
export const PRUNE_EVERY = 16

/** Where a run began: the history's length then. */
export interface Beginning {
  readonly runId: string
  readonly before: number
}

/** Per session active on this runner, the run whose beginning its next save records. */
export type Beginnings = Map<string, Beginning>

/** The session store's `alongside` on this runner: a save of a session with a run beginning records it. */
export const alongside = (beginnings: Beginnings) => (snapshot: Snapshot.Snapshot): SqlSessionStore.Statement | undefined => {
  const run = beginnings.get(snapshot.id)
  return run === undefined ? undefined : SessionRows.runBegun(snapshot.id, run.runId, run.before)
}

/** One activation's records of its session's runs. */
export interface RunRecords {
  /** The store the activation's session saves with: a save records the beginning of the run in progress. */
  readonly store: SessionStore.Service
  /** Where the session's runs with a row began (read at the activation's first run). */
  readonly began: Effect.Effect<ReadonlyMap<string, number>, SqlError.SqlError>
  /**
   * A run begins, at history length `before`, the cluster's request `request` (none for a stream):
   * its next save records it; every `PRUNE_EVERY` runs, the rows of settled runs go first.
   */
  readonly begins: (runId: string, request: Snowflake.Snowflake | null, before: number) => Effect.Effect<void>
  /** The run in progress ended: a save after it records no beginning. */
  readonly ended: Effect.Effect<void>
}

/** The records of the activation of the session at `address`, over `store`, the rows and the cluster's storage. */
export const make = (options: {
  readonly address: EntityAddress.EntityAddress
  readonly store: SessionStore.Service
  readonly rows: SessionRows.SessionRows
  readonly storage: MessageStorage.MessageStorage["Service"]
  readonly beginnings: Beginnings
  /** The tag of the persisted run message (its primary key is the run's id). */
  readonly runTag: string
}): RunRecords => {
  const { address, beginnings, rows, storage, store } = options
  const id = address.entityId
  /** This activation's run whose beginning is not saved yet (in `beginnings`), and how many runs began here. */
  let beginning: Beginning | undefined
  let begun = 0
  /** The rows read at the first run, and kept since (a statement per run spared: ~0.04 ms of bench/cluster's run). */
  let read: Map<string, number> | undefined
  /** The cluster's request of each run begun here: `prune` asks the storage for its reply, not first for its id. */
  const requestOf = new Map<string, Snowflake.Snowflake | null>()

  /**
   * Deletes the rows of the session's settled runs but `runId`'s: a run whose reply the cluster
   * saved (it is not delivered again), or a stream's (the cluster keeps no message of it). Best
   * effort: a row left is deleted next time.
   */
  const prune = (runId: string, read: Map<string, number>) =>
    Effect.ignore(Effect.gen(function*() {
      const runs = [...read.keys()].filter((run) => run !== runId)
      const requests = yield* Effect.forEach(runs, (run) => {
        const known = requestOf.get(run)
        return known !== undefined
          ? Effect.succeed([run, Option.fromNullishOr(known)] as const)
          : Effect.map(storage.requestIdForPrimaryKey({ address, tag: options.runTag, id: run }), (request) => [run, request] as const)
      })
      const ids = requests.flatMap(([, request]) => (Option.isSome(request) ? [request.value] : []))
      const replies = ids.length === 0 ? [] : yield* storage.repliesForUnfiltered(ids)
      const exited = new Set(replies.flatMap((reply) => (reply._tag === "WithExit" ? [reply.requestId] : [])))
      const settled = requests.flatMap(([run, request]) => (Option.isNone(request) || exited.has(String(request.value)) ? [run] : []))
      yield* rows.forget(id, settled)
      for (const run of settled) read.delete(run)
      for (const run of requestOf.keys()) if (run !== runId && !read.has(run)) requestOf.delete(run)
    }))

  return {
    store: {
      ...store,
      save: (snapshot, saveOptions) => {
        const run = beginnings.get(id)
        if (run === undefined) return store.save(snapshot, saveOptions)
        return Effect.tap(store.save(snapshot, saveOptions), () =>
          Effect.sync(() => {
            if (beginnings.get(id) === run) beginnings.delete(id)
            // The row's insert does nothing when the run has one: its first record stands.
            if (read !== undefined && !read.has(run.runId)) read.set(run.runId, run.before)
          }))
      }
    },
    began: Effect.suspend(() => (read !== undefined ? Effect.succeed(read) : Effect.map(rows.begun(id), (rows) => (read = rows)))),
    begins: (runId, request, before) =>
      Effect.suspend(() => {
        requestOf.set(runId, request)
        const record = Effect.sync(() => {
          beginnings.set(id, beginning = { runId, before })
        })
        const due = begun++ % PRUNE_EVERY === 0
        return due && read !== undefined ? Effect.andThen(prune(runId, read), record) : record
      }),
    ended: Effect.sync(() => {
      if (beginning !== undefined && beginnings.get(id) === beginning) beginnings.delete(id)
      beginning = undefined
    })
  }
}
