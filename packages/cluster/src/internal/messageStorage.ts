/**
 * messageStorage — the cluster's mailboxes: effect/cluster's SQL message storage on the program's SqlClient, with
 * the runner's claim of the messages waiting for its shards made cheap on SQLite.
 *
 * A runner reads its mailbox once per message sent to it (a run is one read): the messages of its
 * shards not yet processed nor claimed in the last ten minutes, claimed at once (`last_read`). On
 * SQLite effect writes its shard ids, the time and the claimed ids into the statements' text, so
 * both are prepared anew for every read, and the read's preparation costs more than running it
 * (~0.17 ms of the 0.26 ms the read takes, a tenth of a run through the cluster). Here the same
 * two statements take the shards, the time and the ids as parameters (JSON arrays, `json_each`):
 * their text never changes, so the SqliteClient prepares each once. What they select and claim is
 * effect's, row for row (a test holds the two side by side). A read for given addresses (a runner
 * at its resident-entity cap) and every other dialect keep effect's own.
 */
import * as NodeCrypto from "@effect/platform-node-shared/NodeCrypto"
import { Effect, Layer, Option } from "effect"
import { ClusterError, MessageStorage, ShardId, Snowflake, SqlMessageStorage } from "effect/cluster"
import type { Envelope, Reply } from "effect/cluster"
import { SqlClient } from "effect/sql"

/** A claimed message, as the claim selects it (ids as text: they are 64-bit). */
interface ClaimRow {
  readonly id: string
  readonly shard_id: string
  readonly entity_type: string
  readonly entity_id: string
  readonly kind: number
  readonly tag: string | null
  readonly payload: string | null
  readonly headers: string | null
  readonly trace_id: string | null
  readonly span_id: string | null
  readonly sampled: number | null
  readonly request_id: string
  readonly reply_id: string | null
  readonly reply_reply_id: string | null
  readonly reply_payload: string | null
  readonly reply_sequence: number | null
}

// effect's claim on SQLite (messages of the given shards, not processed, without a final reply or
// a chunk not yet acknowledged, unclaimed for ten minutes, due), its shards, time and limit bound.
const SELECT = `SELECT CAST(m.id AS TEXT) AS id, m.shard_id, m.entity_type, m.entity_id, m.kind, m.tag,
m.payload, m.headers, m.trace_id, m.span_id, m.sampled, CAST(m.request_id AS TEXT) AS request_id,
CAST(m.reply_id AS TEXT) AS reply_id, CAST(r.id AS TEXT) AS reply_reply_id, r.payload AS reply_payload,
r.sequence AS reply_sequence
FROM "cluster_messages" m LEFT JOIN "cluster_replies" r ON r.id = m.last_reply_id
WHERE m.shard_id IN (SELECT value FROM json_each(?))
AND NOT EXISTS (SELECT 1 FROM "cluster_replies" WHERE request_id = m.request_id AND (kind = 0 OR acked = 0))
AND m.processed = 0
AND (m.last_read IS NULL OR m.last_read < DATETIME('now', '-10 minute'))
AND (m.deliver_at IS NULL OR m.deliver_at <= ?)
ORDER BY m.rowid ASC LIMIT ?`

const CLAIM = `UPDATE "cluster_messages" SET last_read = CURRENT_TIMESTAMP WHERE id IN (SELECT value FROM json_each(?))`

const fromRow = (row: ClaimRow): { readonly envelope: Envelope.Encoded; readonly lastSentReply: Option.Option<Reply.Encoded> } => {
  const address = { shardId: ShardId.fromStringEncoded(row.shard_id), entityType: row.entity_type, entityId: row.entity_id }
  switch (Number(row.kind)) {
    case 1:
      return { envelope: { _tag: "AckChunk", id: row.id, requestId: row.request_id, replyId: row.reply_id!, address }, lastSentReply: Option.none() }
    case 2:
      return { envelope: { _tag: "Interrupt", id: row.id, requestId: row.request_id, address }, lastSentReply: Option.none() }
    default:
      return {
        envelope: {
          _tag: "Request",
          requestId: row.id,
          address,
          tag: row.tag!,
          payload: JSON.parse(row.payload!),
          headers: JSON.parse(row.headers!),
          ...(row.trace_id ? { traceId: row.trace_id, spanId: row.span_id!, sampled: !!row.sampled } : undefined)
        },
        lastSentReply: row.reply_reply_id
          ? Option.some({
            _tag: "Chunk",
            id: row.reply_reply_id,
            requestId: row.request_id,
            sequence: Number(row.reply_sequence),
            values: JSON.parse(row.reply_payload!)
          })
          : Option.none()
      }
  }
}

/**
 * `encoded` with SQLite's claim as two statements of constant text (the SqlClient's dialect is
 * SQLite; any other gets `encoded` back).
 *
 * @internal
 */
export const cheaper = (encoded: MessageStorage.Encoded): Effect.Effect<MessageStorage.Encoded, never, SqlClient.SqlClient> =>
  Effect.map(SqlClient.SqlClient, (client) => {
    const sql = client.withoutTransforms()
    return sql.onDialectOrElse({
      sqlite: (): MessageStorage.Encoded => ({
        ...encoded,
        unprocessedMessages: (shardIds, now, options) =>
          options?.addresses !== undefined
            ? encoded.unprocessedMessages(shardIds, now, options)
            : sql.withTransaction(Effect.tap(
              sql.unsafe<ClaimRow>(SELECT, [JSON.stringify(shardIds), now, options?.limit ?? -1]),
              (rows) => (rows.length === 0 ? Effect.void : Effect.asVoid(sql.unsafe(CLAIM, [`[${rows.map((row) => row.id).join(",")}]`])))
            )).pipe(
              Effect.map((rows) => rows.map(fromRow)),
              ClusterError.PersistenceError.refail,
              Effect.withTracerEnabled(false)
            )
      }),
      orElse: () => encoded
    })
  })

/**
 * The cluster's `MessageStorage` on the SqlClient's database: effect's tables and migrations, the
 * claim cheaper on SQLite.
 *
 * @internal
 */
export const layer: Layer.Layer<MessageStorage.MessageStorage, never, SqlClient.SqlClient> = Layer.effect(
  MessageStorage.MessageStorage,
  SqlMessageStorage.makeEncoded().pipe(Effect.flatMap(cheaper), Effect.flatMap(MessageStorage.makeEncoded))
).pipe(Layer.provide([Snowflake.layerGenerator, NodeCrypto.layerDigest]))
