/**
 * openRun — the run a session's stored events show going on: its last event is not a top-level
 * `AgentEnd`, and its `AgentStart` is the latest kept. What a server that did not start the run
 * (another runner's started it, or this process before a restart) knows of it.
 */
import { Effect, Option } from "effect"
import type * as ServerStore from "../ServerStore.ts"

/** Entries read at once, walking back. */
const PAGE = 256

const ends = (entry: ServerStore.Entry) => entry.event._tag === "AgentEnd" && entry.event.agentPath === undefined
const begins = (entry: ServerStore.Entry) => entry.event._tag === "AgentStart" && entry.event.agentPath === undefined

/**
 * The newest kept entry of session `id` that `pick` takes, walking back from the last: `pick` says
 * `"take"`, `"stop"` (nothing older counts) or `"skip"`.
 */
export const findLast = (
  store: ServerStore.Service,
  id: string,
  pick: (entry: ServerStore.Entry) => "take" | "stop" | "skip"
): Effect.Effect<Option.Option<ServerStore.Entry>, ServerStore.ServerStoreError> =>
  Effect.gen(function*() {
    const probe = yield* store.read(id, 0, 0)
    const oldest = Math.max(probe.oldest, 1)
    let end = probe.last
    while (end >= oldest) {
      const from = Math.max(oldest, end - PAGE + 1)
      const { entries } = yield* store.read(id, from - 1, end - from + 1)
      for (let i = entries.length - 1; i >= 0; i--) {
        const picked = pick(entries[i]!)
        if (picked === "take") return Option.some(entries[i]!)
        if (picked === "stop") return Option.none()
      }
      end = from - 1
    }
    return Option.none()
  })

/** The `AgentStart` of the run session `id`'s events show going on, if one is: the newest top-level end or start decides. */
export const find = (store: ServerStore.Service, id: string): Effect.Effect<Option.Option<ServerStore.Entry>, ServerStore.ServerStoreError> =>
  findLast(store, id, (entry) => (ends(entry) ? "stop" : begins(entry) ? "take" : "skip"))
