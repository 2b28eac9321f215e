/**
 * sqlServerRows — the rows of SqlServerStore's tables as the database returns them, read through
 * Schema: a count is an integer, or its text (Postgres returns a `BIGINT` as a string), and an
 * event's body is the JSON eventJson.ts wrote; a sum of tokens (Postgres's `SUM` of `BIGINT`s is a
 * `NUMERIC`: text) is a count. A row that is not one fails with what it lacks.
 */
import { Effect, Schema, SchemaTransformation } from "effect"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import type * as Usage from "@condukt/core/Usage"
import { type Entry, type Listed, type Owned, ServerStoreError, type UsageRow as Summed } from "../ServerStore.ts"
import * as EventJson from "./eventJson.ts"

/** A `BIGINT` as Postgres's driver may return it, as the number it is (the store's counts are far below 2^53). */
const NumberFromBigInt = Schema.BigInt.pipe(Schema.decodeTo(Schema.Number, SchemaTransformation.transform({ decode: Number, encode: globalThis.BigInt })))

/** An integer column: a number, or the `BIGINT` Postgres returns (a bigint, or its decimal text). */
const Count = Schema.Union([Schema.Int, Schema.NumberFromString.check(Schema.isInt()), NumberFromBigInt.check(Schema.isInt())])

/** A row of `condukt_server_sessions`. */
export const SessionRow = Schema.Struct({
  id: Schema.String,
  principal: Schema.String,
  agent: Schema.String,
  created_at: Count,
  last_event_id: Count,
  last_activity: Count,
  input_tokens: Count,
  output_tokens: Count,
  cache_read_tokens: Count,
  cache_write_tokens: Count
})

/** A row of `condukt_server_events`: its number, when it was written, and the event's JSON. */
export const EventRow = Schema.Struct({ id: Count, at: Count, event: Schema.String })

/** A sum of `condukt_server_sessions` or `condukt_server_usage`: its key, its agent, its tokens. */
export const UsageRow = Schema.Struct({
  usage_key: Schema.String,
  agent: Schema.String,
  input_tokens: Count,
  output_tokens: Count,
  cache_read_tokens: Count,
  cache_write_tokens: Count
})

const OpenRun = Schema.Struct({ open_run: Count })

/** The column list a session is read with, in `SessionRow`'s names. */
export const SESSION_COLUMNS = "id, principal, agent, created_at, last_event_id, last_activity, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens"

const decodeSession = Schema.decodeUnknownEffect(SessionRow)
const decodeEvent = Schema.decodeUnknownEffect(EventRow)
const decodeUsage = Schema.decodeUnknownEffect(UsageRow)
const decodeOpen = Schema.decodeUnknownEffect(OpenRun)

const corrupt = (method: string, what: string) => (error: Schema.SchemaError) =>
  new ServerStoreError({ method, description: `${what} is not one this store wrote: ${error.message}` })

/** The usage a row's columns hold; a cache count of 0 is absent, as the memory store keeps it. */
const usageOf = (row: Omit<typeof UsageRow.Type, "usage_key" | "agent">): Usage.Usage => ({
  inputTokens: row.input_tokens,
  outputTokens: row.output_tokens,
  ...(row.cache_read_tokens > 0 ? { cacheReadTokens: row.cache_read_tokens } : {}),
  ...(row.cache_write_tokens > 0 ? { cacheWriteTokens: row.cache_write_tokens } : {})
})

/** A session row as the record it is. */
export const owned = (method: string, row: unknown): Effect.Effect<Owned, ServerStoreError> =>
  Effect.map(Effect.mapError(decodeSession(row), corrupt(method, "a session row")), (row) => ({
    id: row.id,
    principal: row.principal,
    agent: row.agent,
    createdAt: row.created_at,
    lastEventId: row.last_event_id,
    lastActivity: row.last_activity,
    usage: usageOf(row)
  }))

/** A session row with its `open_run` as the list's row it is. */
export const listed = (method: string, row: unknown): Effect.Effect<Listed, ServerStoreError> =>
  Effect.zipWith(owned(method, row), Effect.mapError(decodeOpen(row), corrupt(method, "a session row")), (owned, { open_run }) => ({ ...owned, running: open_run !== 0 }))

/** A sum's row as the usage row it is. */
export const usage = (row: unknown): Effect.Effect<Summed, ServerStoreError> =>
  Effect.map(Effect.mapError(decodeUsage(row), corrupt("usage", "a usage row")), (row) => ({ key: row.usage_key, agent: row.agent, usage: usageOf(row) }))

/** An event row as the entry it is. */
export const entry = (row: unknown): Effect.Effect<Entry, ServerStoreError> =>
  Effect.flatMap(Effect.mapError(decodeEvent(row), corrupt("read", "an event row")), ({ at, event, id }) =>
    Effect.try({
      try: (): Entry => ({ id, at, event: EventJson.decode(event) as SessionEvent.SessionEvent }),
      catch: (cause) => new ServerStoreError({ method: "read", description: `event ${id} is not one this store wrote: ${cause instanceof Error ? cause.message : String(cause)}` })
    }))

const decodeLast = Schema.decodeUnknownEffect(Schema.Struct({ last_event_id: Count }))

/** The `last_event_id` a statement returned. */
export const lastEventId = (method: string, row: unknown): Effect.Effect<number, ServerStoreError> =>
  Effect.map(Effect.mapError(decodeLast(row), corrupt(method, "a session row")), (row) => row.last_event_id)
