/**
 * approvalsHandlers — the `approvals` group: the approval records of the principal's sessions
 * (the store's approval log, through core's `Approvals`), answered by record id as the principal.
 * A server whose sessions' store keeps no approval log answers these routes 404 and says why; the
 * calls waiting are still answered by session (`/sessions/{id}/approvals/{callId}`).
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import * as Approvals from "@condukt/core/Approvals"
import type * as ApprovalRecord from "@condukt/core/ApprovalRecord"
import { Api } from "../Api.ts"
import { Principal } from "../Auth.ts"
import { Conflict, NotFound, Unavailable } from "../ServerError.ts"
import { answerOf, Served } from "./served.ts"

const noLog = new NotFound({ message: "this server's sessions keep no approval log (their store has none): answer waiting calls with POST /sessions/{id}/approvals/{callId}" })

const unknown = (id: string) => new NotFound({ message: `no approval ${JSON.stringify(id.slice(0, 64))} here` })

export const layer = HttpApiBuilder.group(Api, "approvals", Effect.fn(function*(handlers) {
  const served = yield* Served
  const approvals = yield* Effect.serviceOption(Approvals.Approvals)

  /** Whether the record's session is the principal's. */
  const mine = (record: ApprovalRecord.ApprovalRecord, principal: string) =>
    Effect.map(Effect.orElseSucceed(served.store.owned(record.sessionId), () => Option.none()), (owned) => Option.isSome(owned) && owned.value.principal === principal)

  return handlers
    .handle("list", ({ query }) =>
      Effect.gen(function*() {
        if (Option.isNone(approvals)) return yield* noLog
        const principal = yield* Principal
        const page = yield* approvals.value.list({ status: query.status, tool: query.tool, order: query.order, limit: query.limit, cursor: query.cursor }).pipe(
          Effect.mapError((error) => new Unavailable({ message: error.message }))
        )
        const records = yield* Effect.filter(page.records, (record) => mine(record, principal.id))
        return page.next === undefined ? { records } : { records, next: page.next }
      }))
    .handle("answer", ({ params, payload }) =>
      Effect.gen(function*() {
        if (Option.isNone(approvals)) return yield* noLog
        const principal = yield* Principal
        const record = yield* approvals.value.get(params.approvalId).pipe(Effect.mapError(() => unknown(params.approvalId)))
        if (!(yield* mine(record, principal.id))) return yield* unknown(params.approvalId)
        const by = { by: principal.id, ...(payload.reason === undefined ? {} : { reason: payload.reason }) }
        const owned = yield* served.own(record.sessionId)
        // The session woken first, its events observed before the answer: the run it continues is read to its end.
        yield* served.live(owned, () => served.byId.pending(owned.id))
        const give = payload.approved ? approvals.value.approve(record.id, by) : approvals.value.deny(record.id, by)
        return yield* served.runs.answer(owned.id, give).pipe(
          Effect.mapError((error) =>
            error._tag === "ApprovalRefused" ? new Conflict({ message: error.message }) : error._tag === "SessionsError" ? answerOf(error) : new Unavailable({ message: error.message })
          )
        )
      }))
}))
