/**
 * chatHandlers — the `chat` group: `useChat`'s POST and its resume, answered in the AI SDK's UI
 * message stream. The chat's id is the session's id (started with the server's default agent the
 * first time a principal sends it); the session keeps the conversation, so of the messages the
 * client sends only the last counts: a user's text is the prompt to run, an assistant's answered
 * approvals are the answers to give (then the run goes on, in the same assistant message).
 *
 * An answer ends when its run ends, or when the run waits for people: every call the session has
 * waiting was shown to the client as asking (`finish` with `tool-calls`, so the client can answer
 * and POST again).
 */
import { Deferred, Effect, Option, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import * as SessionId from "@condukt/core/SessionId"
import { Api } from "../Api.ts"
import { Principal } from "../Auth.ts"
import { BadRequest, Conflict } from "../ServerError.ts"
import type * as ServerStore from "../ServerStore.ts"
import * as UiMessageStream from "../UiMessageStream.ts"
import type * as Runs from "./runs.ts"
import { answerOf, now, Served, type Service } from "./served.ts"
import { endsRun } from "./sessionsHandlers.ts"
import * as OpenRun from "./openRun.ts"
import * as Tail from "./tail.ts"

const encoder = new TextEncoder()

/** The run's id: its first event's (an AgentStart). */
const runIdOf = (served: Service, id: string, first: number) =>
  Effect.map(served.store.read(id, first - 1, 1), (read) => read.entries[0]?.event.runId ?? "")

/**
 * The UI message stream of session `id`'s events after `after`, through `ui`: to the run's end, or
 * to where the run waits for answers the client was shown.
 */
const answer = (served: Service, id: string, after: number, ui: UiMessageStream.Encoder, release: Effect.Effect<void>) => {
  /** The calls this answer showed as asking, and not yet settled. */
  const asking = new Set<string>()
  /** The calls of the turn's batch shown here with neither a result nor a request yet. */
  const unsettled = new Set<string>()
  const step = (entry: ServerStore.Entry) =>
    Effect.gen(function*() {
      const event = entry.event
      const chunks = [...ui.push(event)]
      if (event.agentPath === undefined) {
        if (event._tag === "TurnStart") unsettled.clear()
        if (event._tag === "ToolCall") unsettled.add(event.callId)
        if (event._tag === "ApprovalRequested") {
          asking.add(event.callId)
          unsettled.delete(event.callId)
        }
        if (event._tag === "ToolResult") {
          asking.delete(event.callId)
          unsettled.delete(event.callId)
        }
      }
      // The run waits for people once every call of its batch has its result or asks (the batch parked).
      if (endsRun(entry) || asking.size === 0 || unsettled.size > 0) return { chunks, end: endsRun(entry) }
      // Nothing newer written: does the run wait for people, on calls all shown here?
      const newer = yield* served.store.read(id, entry.id, 1)
      if (newer.entries.length > 0) return { chunks, end: false }
      const pending = yield* Effect.orElseSucceed(served.byId.pending(id), () => [])
      const waits = pending.length > 0 && pending.every((call) => asking.has(call.callId))
      return waits ? { chunks: [...chunks, ...ui.pause()], end: true } : { chunks, end: false }
    })
  const body = Tail.entries(served.store, id, after).pipe(
    Stream.mapEffect(step),
    Stream.takeUntil((result) => result.end),
    Stream.flatMap((result) => Stream.fromIterable(result.chunks)),
    Stream.map((chunk) => encoder.encode(UiMessageStream.frame(chunk))),
    Stream.concat(Stream.succeed(encoder.encode(UiMessageStream.DONE))),
    Stream.ensuring(release),
    Stream.orDie
  )
  return HttpServerResponse.stream(body, { headers: UiMessageStream.HEADERS })
}

/** The newest `ApprovalRequested` kept of one of `callIds`: the continuation of its run starts after it. */
const lastAsked = (served: Service, id: string, callIds: ReadonlySet<string>) =>
  OpenRun.findLast(served.store, id, (entry) => (entry.event._tag === "ApprovalRequested" && callIds.has(entry.event.callId) ? "take" : "skip")).pipe(
    Effect.mapError(answerOf)
  )

export const layer = HttpApiBuilder.group(Api, "chat", Effect.fn(function*(handlers) {
  const served = yield* Served
  const { byId, runs, settings, store } = served

  /** The principal's session for chat `id`, started with the default agent the first time. */
  const chatSession = (id: string) =>
    Effect.gen(function*() {
      const principal = yield* Principal
      const refused = SessionId.check(id)
      if (refused !== undefined) return yield* new BadRequest({ message: `a chat's id is its session's: ${refused.message}` })
      const existing = yield* store.owned(id).pipe(Effect.mapError(answerOf))
      if (Option.isNone(existing)) {
        const agent = settings.defaultAgent
        if (agent === undefined) return yield* new BadRequest({ message: "this server has no default agent for chats: start the session first (POST /sessions with its id)" })
        yield* store.claim({ id, principal: principal.id, agent, now: yield* now }).pipe(Effect.mapError(answerOf))
      }
      return yield* served.own(id)
    })

  /** Waits for the run's first event; its number and the run's id. */
  const begun = (active: Runs.Active, id: string) =>
    Effect.flatMap(Deferred.await(active.started), (first) => Effect.map(runIdOf(served, id, first), (runId) => ({ first, runId }))).pipe(Effect.mapError(answerOf))

  /** The run going on: one started (or followed) here, else the one the store shows (another runner's server reads it). */
  const current = (id: string) => {
    const active = runs.active(id)
    if (active !== undefined) return Effect.map(begun(active, id), Option.some)
    return OpenRun.find(store, id).pipe(Effect.mapBoth({ onFailure: answerOf, onSuccess: Option.map((entry) => ({ first: entry.id, runId: entry.event.runId })) }))
  }

  return handlers
    .handle("send", ({ payload }) =>
      Effect.gen(function*() {
        const owned = yield* chatSession(payload.id)
        const principal = yield* Principal
        const answers = UiMessageStream.answersOf(payload)
        if (answers.length > 0) {
          // The client sends every answer its message holds, those of earlier rounds too: the ones for calls waiting now count.
          const waiting = new Set((yield* served.live(owned, () => byId.pending(owned.id))).map((call) => call.callId))
          const fresh = answers.filter((given) => waiting.has(given.callId))
          if (fresh.length === 0) return yield* new Conflict({ message: "no call of this chat waits for these answers (answered already, or its run ended)" })
          const give = Effect.forEach(fresh, (given) => {
            const by = { by: principal.id, ...(given.reason === undefined ? {} : { reason: given.reason }) }
            return given.approved ? byId.approve(owned.id, given.callId, by) : byId.deny(owned.id, given.callId, given.reason, by)
          }, { discard: true })
          // A run parked before this server started (or started by another) is followed from here.
          yield* served.live(owned, () => runs.answer(owned.id, give))
          // Where the run goes on from: after the request of an answered call (its run's message), or
          // (the request lost to a kill -9) the run going on now.
          const asked = yield* lastAsked(served, owned.id, new Set(fresh.map((given) => given.callId)))
          const from = Option.isSome(asked)
            ? Option.some({ after: asked.value.id, runId: asked.value.event.runId })
            : Option.map(yield* current(owned.id), ({ first, runId }) => ({ after: first - 1, runId }))
          if (Option.isNone(from)) return yield* new Conflict({ message: "the run these answers were for has ended" })
          const release = yield* served.slot
          return answer(served, owned.id, from.value.after, UiMessageStream.make({ messageId: from.value.runId, continuing: true, answers: fresh }), release)
        }
        if (payload.trigger === "regenerate-message") {
          return yield* new BadRequest({ message: "regenerating a reply is not supported: the session keeps its history; send a new message instead" })
        }
        const prompt = UiMessageStream.promptOf(payload)
        if (prompt._tag === "Failure") return yield* new BadRequest({ message: prompt.failure.message })
        const release = yield* served.slot
        const { first } = yield* served.startRun(owned, prompt.success).pipe(Effect.onError(() => release))
        const runId = yield* runIdOf(served, owned.id, first).pipe(Effect.mapError(answerOf), Effect.onError(() => release))
        return answer(served, owned.id, first - 1, UiMessageStream.make({ messageId: runId }), release)
      }))
    .handle("resume", ({ params }) =>
      Effect.gen(function*() {
        const owned = yield* served.own(params.id)
        yield* runs.settle(owned.id)
        const going = yield* current(owned.id)
        if (Option.isNone(going)) return HttpServerResponse.empty({ status: 204 })
        const release = yield* served.slot
        return answer(served, owned.id, going.value.first - 1, UiMessageStream.make({ messageId: going.value.runId }), release)
      }))
}))
