/**
 * mailboxSweep — the cluster's mailboxes kept to the messages that may still matter.
 *
 * effect/cluster keeps every persisted message and its replies for good: each run leaves its
 * request (the prompt) and its final reply (the run's messages, tool results included) in
 * `cluster_messages` and `cluster_replies`, a second copy of every transcript that grows without end
 * and that no stop of a session removes. A message matters while it may be delivered (not
 * processed) and, once answered, while its caller may send it again and must get the same reply
 * (ClusterSessions sends a call the cluster cut off again for 10 s). So each runner deletes, every
 * `interval`, the answered requests of an entity type whose ids (snowflakes: their time) are older
 * than `retention`, with their replies and the envelopes about them (interrupts, acknowledgements):
 * 500 requests a transaction, oldest first, so a sweep never holds SQLite's one writer for long.
 * Runners sweep the same tables at once harmlessly (a row is deleted once). A request never
 * answered (its run waits, or will be delivered again) is kept.
 */
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { MachineId, Snowflake } from "effect/cluster"
import { SqlClient } from "effect/sql"

/** Requests deleted per transaction. */
const BATCH = 500

/** @internal */
export interface Options {
  /** The entity type whose answered requests are deleted. */
  readonly entityType: string
  /** How long an answered request is kept (from when it was sent). */
  readonly retention: Duration.Input
  /** How often the runner sweeps. */
  readonly interval: Duration.Input
}

/**
 * One sweep: the answered requests of `options.entityType` sent before `retention` ago, deleted
 * in batches; how many.
 *
 * @internal
 */
export const sweep = (options: Pick<Options, "entityType" | "retention">) =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const now = yield* Clock.currentTimeMillis
    const before = String(Snowflake.make({ timestamp: now - Duration.toMillis(Duration.fromInputUnsafe(options.retention)), machineId: MachineId.make(0), sequence: 0 }))
    let deleted = 0
    while (true) {
      const batch = yield* sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<{ readonly id: string }>`SELECT CAST(id AS TEXT) AS id FROM cluster_messages
          WHERE id < ${before} AND kind = 0 AND processed = ${sql.literal(sql.onDialectOrElse({ sqlite: () => "1", orElse: () => "TRUE" }))}
          AND entity_type = ${options.entityType} ORDER BY id LIMIT ${BATCH}`
        if (rows.length === 0) return 0
        const ids = rows.map((row) => row.id)
        yield* sql`DELETE FROM cluster_replies WHERE ${sql.in("request_id", ids)}`
        yield* sql`DELETE FROM cluster_messages WHERE ${sql.in("request_id", ids)}`
        return rows.length
      }))
      deleted += batch
      if (batch < BATCH) return deleted
    }
  })

/**
 * A sweep every `options.interval` for as long as the layer lives (a failed sweep is logged and
 * the next one tries again).
 *
 * @internal
 */
export const layer = (options: Options): Layer.Layer<never, never, SqlClient.SqlClient> =>
  Layer.effectDiscard(Effect.forkScoped(
    sweep(options).pipe(
      Effect.catchCause((cause) => Effect.logWarning("Could not sweep the cluster's mailboxes", cause)),
      Effect.repeat(Schedule.spaced(options.interval)),
      Effect.delay(options.interval)
    )
  ))
