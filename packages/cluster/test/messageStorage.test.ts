/**
 * internal/messageStorage: on SQLite, a runner's claim of its waiting messages runs statements of
 * constant text, and selects and claims what effect's own claim does, row for row: each read here
 * is made by both on the same mailbox (the claims cleared between them) and compared whole.
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type Envelope, type MessageStorage, SqlMessageStorage } from "effect/cluster"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as SqliteClient from "@condukt/node/SqliteClient"
import { cheaper } from "../src/internal/messageStorage.ts"
import { TempDir } from "@condukt/testing"

const tempDir = TempDir.make("condukt-store-")

// Snowflake-sized ids (over 2^53): they must come back exactly.
let next = 251501228041703424n
const id = () => String(next++)

const address = (shard: number, entityId: string) => ({ shardId: { group: "default", id: shard }, entityType: "Session", entityId })

const request = (shard: number, extra: Partial<Envelope.PartialRequestEncoded> = {}): Envelope.PartialRequestEncoded => ({
  _tag: "Request",
  requestId: id(),
  address: address(shard, `s${shard}`),
  tag: "Run",
  payload: { runId: id(), prompt: "note one" },
  headers: { "x-run": "1" },
  ...extra
})

describe("the SQLite claim of waiting messages", () => {
  it.live("selects and claims what effect's claim does, with a limit, and claimed messages stay claimed", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const layer = Layer.merge(SqliteClient.layer({ file: path.join(dir, "cluster.db") }), NodeCrypto.layerDigest)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const effects = yield* SqlMessageStorage.makeEncoded()
        const ours = yield* cheaper(effects)
        assert.notStrictEqual(ours.unprocessedMessages, effects.unprocessedMessages)
        const now = Date.now()
        const save = (envelope: Envelope.Encoded, deliverAt: number | null = null) =>
          effects.saveEnvelope({ envelope, primaryKey: null, deliverAt })

        const plain = request(1)
        yield* save(plain)
        yield* save(request(2, { traceId: "trace-1", spanId: "span-1", sampled: true }))
        yield* save(request(3)) // a shard not read
        yield* save(request(1), now + 3_600_000) // not due yet
        yield* save(request(2), now - 1_000) // due
        const answered = request(1)
        yield* save(answered)
        yield* effects.saveReply({ _tag: "WithExit", id: id(), requestId: answered.requestId, exit: { _tag: "Success", value: "done" } })
        const unacked = request(2)
        yield* save(unacked)
        yield* effects.saveReply({ _tag: "Chunk", id: id(), requestId: unacked.requestId, sequence: 0, values: ["a"] })
        const acked = request(1, { tag: "Stream" })
        yield* save(acked)
        const chunk = id()
        yield* effects.saveReply({ _tag: "Chunk", id: chunk, requestId: acked.requestId, sequence: 0, values: ["b", "c"] })
        yield* save({ _tag: "AckChunk", id: id(), requestId: acked.requestId, replyId: chunk, address: acked.address })
        yield* save({ _tag: "Interrupt", id: id(), requestId: plain.requestId, address: plain.address })

        const shards: [string, ...Array<string>] = ["default:1", "default:2"]
        const idOf = (envelope: Envelope.Encoded) => (envelope._tag === "Request" ? envelope.requestId : envelope.id)
        const unclaim = (messages: ReadonlyArray<{ readonly envelope: Envelope.Encoded }>) =>
          sql`UPDATE cluster_messages SET last_read = NULL WHERE id IN (${sql.literal(messages.map((message) => idOf(message.envelope)).join(","))})`
        // What effect's claim reads, its claims cleared, then what ours reads.
        const both = (read: (storage: MessageStorage.Encoded) => ReturnType<MessageStorage.Encoded["unprocessedMessages"]>) =>
          Effect.gen(function*() {
            const expected = yield* read(effects)
            yield* unclaim(expected)
            const actual = yield* read(ours)
            return { expected, actual }
          })

        const all = yield* both((storage) => storage.unprocessedMessages(shards, now, { limit: 100 }))
        assert.deepStrictEqual(all.actual, all.expected)
        // Every kind of row is in the comparison: requests with and without a trace, a stream whose
        // chunk was acknowledged (its last reply), the acknowledgement, an interrupt.
        assert.deepStrictEqual(all.actual.map((message) => message.envelope._tag), ["Request", "Request", "Request", "Request", "AckChunk", "Interrupt"])
        assert.strictEqual(all.actual.filter((message) => message.lastSentReply._tag === "Some").length, 1)
        assert.strictEqual(all.actual.filter((message) => message.envelope._tag === "Request" && message.envelope.traceId === "trace-1").length, 1)

        // Claimed: neither reads them again.
        assert.deepStrictEqual(yield* ours.unprocessedMessages(shards, now), [])
        assert.deepStrictEqual(yield* effects.unprocessedMessages(shards, now), [])

        yield* unclaim(all.actual)
        const limited = yield* both((storage) => storage.unprocessedMessages(shards, now, { limit: 2 }))
        assert.strictEqual(limited.actual.length, 2)
        assert.deepStrictEqual(limited.actual, limited.expected)
        // The rest, for both, the first two claimed.
        const rest = yield* both((storage) => storage.unprocessedMessages(shards, now, { limit: 100 }))
        assert.strictEqual(rest.actual.length, 4)
        assert.deepStrictEqual(rest.actual, rest.expected)
      }).pipe(Effect.provide(layer))
    }))
})
