/**
 * tail — a session's events after a number, as the store has them and then as they are written:
 * what an SSE reader and a chat answer both read. It ends after the entry `stop` picks, or never.
 */
import { Effect, Option, Stream } from "effect"
import type * as ServerStore from "../ServerStore.ts"

/** Entries read from the store at once. */
const PAGE = 256

/**
 * The entries of session `id` after `after`, live. With `stop`, the stream ends after the first
 * entry it picks.
 */
export const entries = (
  store: ServerStore.Service,
  id: string,
  after: number,
  stop?: (entry: ServerStore.Entry) => boolean
): Stream.Stream<ServerStore.Entry, ServerStore.ServerStoreError> =>
  Stream.paginate(after, (cursor) =>
    Effect.flatMap(store.read(id, cursor, PAGE), (read) => {
      if (read.entries.length === 0) return Effect.as(store.wait(id, cursor), [[], Option.some(cursor)] as const)
      const last = stop === undefined ? -1 : read.entries.findIndex(stop)
      if (last >= 0) return Effect.succeed([read.entries.slice(0, last + 1), Option.none()] as const)
      return Effect.succeed([read.entries, Option.some(read.entries[read.entries.length - 1]!.id)] as const)
    }))
