/**
 * sessionsHandlers — the `sessions` group: a principal's sessions (a page filtered by agent and
 * id, each with whether it runs and its cost), their runs, their events stream
 * (resumed after `Last-Event-ID`), their history and the answers they wait for.
 */
import { Deferred, Effect, Option, Stream } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import * as SessionId from "@condukt/core/SessionId"
import * as Usage from "@condukt/core/Usage"
import * as Uuid7 from "@condukt/core/Uuid7"
import { Api, type SessionRow } from "../Api.ts"
import { Principal } from "../Auth.ts"
import { BadRequest, Conflict, Gone } from "../ServerError.ts"
import type * as ServerStore from "../ServerStore.ts"
import * as OpenRun from "./openRun.ts"
import { answerOf, now, Served } from "./served.ts"
import * as Sse from "./sse.ts"
import * as Tail from "./tail.ts"

/** Whether `entry` ends its run (the top-level session's AgentEnd, not a sub-agent's). */
export const endsRun = (entry: ServerStore.Entry): boolean => entry.event._tag === "AgentEnd" && entry.event.agentPath === undefined

export const layer = HttpApiBuilder.group(Api, "sessions", Effect.fn(function*(handlers) {
  const served = yield* Served
  const { byId, runs, settings, store } = served

  const startRun = served.startRun

  /**
   * The session as a row: its record, whether it runs, its cost when its agent has a price, and
   * where it runs when the sessions are a cluster's (`ById.runner`: nothing is asked of the session).
   */
  const rowOf = (owned: ServerStore.Owned, running: boolean): Effect.Effect<SessionRow> => {
    const price = settings.prices?.(owned.agent)
    const row: SessionRow = price === undefined ? { ...owned, running } : { ...owned, running, cost: Usage.cost(owned.usage, price) }
    return byId.runner === undefined ? Effect.succeed(row) : Effect.map(byId.runner(owned.id), (runner) => ({ ...row, runner }))
  }

  return handlers
    .handle("start", ({ payload }) =>
      Effect.gen(function*() {
        const principal = yield* Principal
        const agent = payload.agent ?? settings.defaultAgent
        if (agent === undefined) return yield* new BadRequest({ message: "name the agent to start (`agent`): this server has no default agent" })
        if (settings.agents !== undefined && !settings.agents.includes(agent)) {
          return yield* new BadRequest({ message: `no agent is named ${JSON.stringify(agent.slice(0, 64))} here (agents: ${settings.agents.join(", ")})` })
        }
        const id = payload.id ?? (yield* Uuid7.make)
        const refused = SessionId.check(id)
        if (refused !== undefined) return yield* new BadRequest({ message: refused.message })
        const claimed = yield* store.claim({ id, principal: principal.id, agent, now: yield* now }).pipe(Effect.mapError(answerOf))
        if (!claimed) {
          const owned = yield* served.own(id).pipe(Effect.mapError(() => new Conflict({ message: `the session id ${JSON.stringify(id.slice(0, 64))} is taken: choose another, or leave it out for a new one` })))
          if (owned.agent !== agent) return yield* new Conflict({ message: `your session ${JSON.stringify(id.slice(0, 64))} runs agent ${owned.agent}, not ${agent}` })
        }
        const owned = yield* served.own(id)
        yield* served.live(owned, () => byId.pending(id))
        return owned
      }))
    .handle("list", ({ query }) =>
      Effect.gen(function*() {
        const principal = yield* Principal
        const listed = yield* store.list(principal.id, { limit: query.limit ?? 100, before: query.before, agent: query.agent, q: query.q }).pipe(
          Effect.mapError(answerOf)
        )
        // Running: the store's events show a run going, or this server has just started one.
        const sessions = yield* Effect.forEach(listed, ({ running, ...owned }) => rowOf(owned, running || runs.active(owned.id) !== undefined))
        return { sessions }
      }))
    .handle("get", ({ params }) =>
      Effect.flatMap(Effect.tap(served.own(params.id), (owned) => runs.settle(owned.id)), (owned) =>
        runs.active(owned.id) !== undefined
          ? rowOf(owned, true)
          // A run another server (or this process before a restart) started shows in the store.
          : Effect.flatMap(Effect.mapError(OpenRun.find(store, owned.id), answerOf), (open) => rowOf(owned, Option.isSome(open)))))
    .handle("stop", ({ params }) => Effect.flatMap(served.own(params.id), (owned) => Effect.mapError(byId.stop(owned.id), answerOf)))
    .handle("run", ({ params, payload }) =>
      Effect.gen(function*() {
        const owned = yield* served.own(params.id)
        const { active } = yield* startRun(owned, payload.prompt)
        return yield* Deferred.await(active.ended)
      }))
    .handle("stream", ({ params, payload }) =>
      Effect.gen(function*() {
        const owned = yield* served.own(params.id)
        const release = yield* served.slot
        const { first } = yield* startRun(owned, payload.prompt).pipe(Effect.onError(() => release))
        const frames = Tail.entries(store, owned.id, first - 1, endsRun).pipe(Stream.map(Sse.frame), Stream.ensuring(release))
        return Sse.response(frames)
      }))
    .handle("abort", ({ params }) => Effect.flatMap(served.own(params.id), (owned) => served.live(owned, () => byId.abort(owned.id))))
    .handle("events", ({ headers, params, query }) =>
      Effect.gen(function*() {
        const owned = yield* served.own(params.id)
        yield* runs.settle(owned.id)
        const asked = headers["last-event-id"] ?? query.after
        const after = yield* Sse.resumeAfter(asked).pipe(Effect.mapError((message) => new BadRequest({ message })))
        const read = yield* store.read(owned.id, after, 1).pipe(Effect.mapError(answerOf))
        // A reader resuming before the window lost events: say so, rather than skip them silently.
        if (asked !== undefined && read.oldest > after + 1) {
          return yield* new Gone({
            message: `events after ${after} are no longer kept (the oldest kept is ${read.oldest}): read the conversation with GET /sessions/{id}/history, then follow the events from ${read.last}`,
            oldest: read.oldest
          })
        }
        if (after > read.last) {
          return yield* new BadRequest({ message: `no event ${after} was sent in this session yet (the last is ${read.last})` })
        }
        const start = asked === undefined ? Math.max(0, read.oldest - 1) : after
        const release = yield* served.slot
        return Sse.response(Tail.entries(store, owned.id, start).pipe(Stream.map(Sse.frame), Stream.ensuring(release)))
      }))
    .handle("history", ({ params }) => Effect.flatMap(served.own(params.id), (owned) => served.live(owned, () => byId.history(owned.id))))
    .handle("pending", ({ params }) => Effect.flatMap(served.own(params.id), (owned) => served.live(owned, () => byId.pending(owned.id))))
    .handle("answer", ({ params, payload }) =>
      Effect.gen(function*() {
        const owned = yield* served.own(params.id)
        const principal = yield* Principal
        const by = { by: principal.id, ...(payload.reason === undefined ? {} : { reason: payload.reason }) }
        yield* served.live(owned, () => runs.answer(owned.id, payload.approved ? byId.approve(owned.id, params.callId, by) : byId.deny(owned.id, params.callId, payload.reason, by)))
      }))
    .handle("respond", ({ params, payload }) =>
      Effect.flatMap(served.own(params.id), (owned) => served.live(owned, () => runs.answer(owned.id, byId.respond(owned.id, params.requestId, payload)))))
    .handle("usage", ({ params }) =>
      Effect.map(served.own(params.id), (owned) => {
        const price = settings.prices?.(owned.agent)
        return price === undefined ? { usage: owned.usage } : { usage: owned.usage, cost: Usage.cost(owned.usage, price) }
      }))
}))
