/**
 * admission — a session's approvals as the executor's wrapper: which calls of a batch may run.
 *
 * A call passes the session's rules (`Approval.check`) after its arguments are decoded and before
 * its clock starts: a rule that denies is its result at once, one that allows lets it run, and one
 * that asks (or the tool's own `needsApproval`) has the session's waiting room ask a person
 * (approvals.ts); a denial is the call's result, and the other calls of the batch run meanwhile.
 * A batch's requests are all made when it starts: each call that must ask gets a fiber of its own,
 * a child of the run's (an abort ends them with it), and waits for its own answer when its turn
 * comes. Every result is heard by the waiting room, which keeps it for a save and a parked batch.
 * A session without rules and without a flagged tool has no admission at all.
 */
import { type Deferred, Effect, Fiber } from "effect"
import * as Approval from "../Approval.ts"
import type * as Executor from "../Executor.ts"
import * as Tool from "../Tool.ts"
import type { SessionError } from "../SessionError.ts"
import type * as Snapshot from "../Snapshot.ts"

/** A batch parked: what its continuation needs. */
export interface Parking {
  /** The waiting calls and the finished calls' results, as a store saves them. */
  readonly batch: Snapshot.Batch
  /** The finished calls' results, whole (their tool's name, their data), in the order they finished. */
  readonly finished: ReadonlyArray<Executor.Result>
  /** What the finished calls set in the assigns, in the order they finished. */
  readonly patches: ReadonlyArray<Readonly<Record<string, unknown>>>
}

/** One batch's side of the waiting room: the rules, how a call asks, each result, and what completes when the batch parks. */
export interface Gate {
  readonly policy: Approval.Policy | undefined
  /** Asks a person about one call (`rule`: what asked) and waits for the answer. */
  readonly request: (call: Executor.Call, rule: string) => Effect.Effect<Approval.Answer>
  /**
   * Hears each call's result as it finishes, with what it sets in the assigns, while the batch's
   * requests are asked (a store keeps them; a batch that parks keeps them for its continuation).
   */
  readonly settled: (result: Executor.Result, patch?: Readonly<Record<string, unknown>>) => Effect.Effect<void>
  /** Completed when every call is finished or waiting; made only when a batch can park (no timeout). */
  readonly parked: Deferred.Deferred<Parking> | undefined
  /** Failed when the session's answerer could not answer a call of the batch; made only when it has an answerer. */
  readonly refused: Deferred.Deferred<never, SessionError> | undefined
  /** Runs the shadow policies over a call the rules decided (`rule`), without waiting: when there are some and a log. */
  readonly observe: ((call: Executor.Call, args: unknown, context: Tool.Context, rule: string) => Effect.Effect<void>) | undefined
}

/** How a batch's calls ask while they run: an approval goes on, any other answer is the call's failure, which the model reads. */
export const asker = (ask: (call: Executor.Call, asked: Tool.Asked) => Effect.Effect<Approval.Answer>): Executor.Asker => (call, asked) =>
  Effect.flatMap(ask(call, asked), (answer) => {
    const refused = Approval.render(answer)
    return refused === undefined ? Effect.void : Effect.fail(new Tool.AskRefused({ description: refused }))
  })

/** The wrapper for one batch through `gate`; `undefined` when no call can ask (no rules, no flagged tool). */
export const admission = <R>(gate: Gate, flagged: boolean): Executor.Wrapper<R> | undefined => {
  if (!flagged && gate.policy === undefined) return undefined
  /** The answers of a batch's calls, asked when it started; a call of a batch not in it runs. */
  let answers: Map<Executor.Call, Effect.Effect<string | undefined, never, R>> | undefined
  const observe = gate.observe
  // The shadow policies see each call once the live rules have decided it (an ask: before it is asked).
  const check = (found: Executor.Found<R>, args: unknown, context: Tool.Context) =>
    Approval.check(gate.policy, found.tool, args, context, (rule) => gate.request(found.call, rule), observe && ((rule) => observe(found.call, args, context, rule)))
  return {
    batch: (found, context) =>
      Effect.map(
        Effect.forEach(found, ({ call, tool }) => {
          // What the rules settle without asking (allowed, unflagged, denied) needs no fiber.
          const verdict = Approval.verdict(gate.policy, tool.name)
          // With shadow policies every call goes through the rules, to be seen.
          const unasked = tool.discovered === undefined
            ? verdict._tag === "Allow" || (verdict._tag === "Tool" && tool.needsApproval === false)
            : verdict._tag === "Allow" && gate.policy!.named.has(tool.name)
          if (observe === undefined && unasked) return Effect.undefined
          if (observe === undefined && verdict._tag === "Deny") return Effect.succeed(Effect.succeed(Approval.deniedByRule(tool.name, verdict.pattern)))
          // Bad arguments ask nothing: the call reads why they do not decode.
          const asked = Effect.flatMap(Effect.result(tool.decode(call.input)), (decoded) =>
            decoded._tag === "Failure" ? Effect.undefined : check({ call, tool }, decoded.success, { ...context, callId: call.id, approve: Tool.cannotAsk(tool.name) }))
          return Effect.map(Effect.forkChild(asked), Fiber.join)
        }),
        (asked) => {
          answers = new Map()
          found.forEach(({ call }, i) => {
            const answer = asked[i]
            if (answer !== undefined) answers!.set(call, answer)
          })
        }
      ),
    admit: (found, args, context) => {
      if (answers === undefined) return check(found, args, context)
      return answers.get(found.call) ?? Effect.undefined
    },
    settled: (done) => gate.settled(done.result, done.patch)
  }
}
