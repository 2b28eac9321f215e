/**
 * storeParts — what both server stores share: the usage a batch of events adds, whether it leaves
 * a run going, the UTC day a write falls on, an event's rough size, and the waiters a write wakes.
 */
import { Deferred, Effect } from "effect"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import type * as Usage from "@condukt/core/Usage"

/** The usage a batch of events adds: the sum of its turns'. */
export const usageOf = (events: ReadonlyArray<SessionEvent.SessionEvent>, base: Usage.Usage): Usage.Usage => {
  let usage = base
  for (const event of events) {
    if (event._tag !== "TurnEnd" || event.agentPath !== undefined) continue
    usage = add(usage, event.usage)
  }
  return usage
}

/** Whether a run is going after `events`: the last top-level start or end among them decides, `current` when neither is there. */
export const runningAfter = (events: ReadonlyArray<SessionEvent.SessionEvent>, current: boolean): boolean => {
  let running = current
  for (const event of events) {
    if (event.agentPath !== undefined) continue
    if (event._tag === "AgentStart") running = true
    else if (event._tag === "AgentEnd") running = false
  }
  return running
}

/** The UTC day of `now` (epoch ms), as `YYYY-MM-DD`. */
export const dayOf = (now: number): string => new Date(now).toISOString().slice(0, 10)

/** Every token of `usage`, how sums are ordered. */
export const tokensOf = (usage: Usage.Usage): number =>
  usage.inputTokens + usage.outputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0)

/** The sum of two usages; a cache count of 0 is absent. */
export const add = (a: Usage.Usage, b: Usage.Usage): Usage.Usage => {
  const cacheRead = (a.cacheReadTokens ?? 0) + (b.cacheReadTokens ?? 0)
  const cacheWrite = (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0)
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...(cacheRead > 0 ? { cacheReadTokens: cacheRead } : {}),
    ...(cacheWrite > 0 ? { cacheWriteTokens: cacheWrite } : {})
  }
}

/** No tokens. */
export const NO_USAGE: Usage.Usage = { inputTokens: 0, outputTokens: 0 }

/**
 * Wakes the readers waiting on a session's next event: one deferred per session, completed and
 * replaced at each write.
 */
export const makeWaiters = () => {
  const waiting = new Map<string, Deferred.Deferred<void>>()
  return {
    wake: (id: string): void => {
      const deferred = waiting.get(id)
      if (deferred === undefined) return
      waiting.delete(id)
      Deferred.doneUnsafe(deferred, Effect.void)
    },
    next: (id: string): Deferred.Deferred<void> => {
      let deferred = waiting.get(id)
      if (deferred === undefined) {
        deferred = Deferred.makeUnsafe<void>()
        waiting.set(id, deferred)
      }
      return deferred
    }
  }
}

/** An event's characters, roughly: its texts, and the JSON of its values (a call's input, a result's data). */
export const sizeOf = (event: SessionEvent.SessionEvent): number => {
  switch (event._tag) {
    case "TextDelta":
    case "ThinkingDelta":
      return 128 + event.text.length
    case "ToolCall":
    case "ApprovalRequested":
      return 128 + (JSON.stringify(event.input)?.length ?? 0)
    case "ToolResult":
      return 128 + event.content.length + (event.data === undefined ? 0 : JSON.stringify(event.data)?.length ?? 0)
    default:
      return 256
  }
}

