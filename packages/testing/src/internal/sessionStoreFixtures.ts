/**
 * The snapshots and helpers the SessionStore conformance suites share (SessionStoreConformance and
 * its approval-log suite): a scripted turn, a snapshot of so many turns, the store error an effect
 * fails with.
 */
import { assert } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as Message from "@condukt/core/Message"
import type * as SessionStore from "@condukt/core/SessionStore"
import * as Snapshot from "@condukt/core/Snapshot"

/** The store error an effect fails with (it must fail). */
export const storeError = <A>(effect: Effect.Effect<A, SessionStore.SessionStoreError>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit))
    return Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail" ? exit.cause.reasons[0].error : undefined
  })

/** A turn: a prompt, a call, its result, a reply. */
export const turn = (n: number): ReadonlyArray<Message.Message> => [
  Message.user(`prompt ${n}`),
  Message.assistant([Message.toolCallPart({ id: `call_${n}`, name: "echo", input: { text: `t${n}` } })]),
  Message.toolResult({ callId: `call_${n}`, name: "echo", content: `t${n}`, isError: false }),
  Message.assistant([Message.textPart(`reply ${n}`)])
]

/** Session `id` after `turns` turns (`turn(1)` … `turn(turns)`), its other fields as `fields` says. */
export const snapshot = (id: string, turns: number, fields: Partial<Snapshot.Snapshot> = {}): Snapshot.Snapshot =>
  Snapshot.make({
    id,
    agent: "coder",
    model: "test:scripted",
    system: "You fix tests.",
    messages: Array.from({ length: turns }, (_, i) => turn(i + 1)).flat(),
    assigns: { turns },
    createdAt: 1_000,
    updatedAt: 1_000 + turns,
    ...fields
  })
