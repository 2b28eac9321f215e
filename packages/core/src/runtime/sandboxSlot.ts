/**
 * sandboxSlot — a session's sandbox, chosen at start and built when it is first needed (the first run or tool call).
 *
 * An idle session holds no sandbox (no directory handle, no memory filesystem): `Session` decides
 * at start which one it will have, and the first call that needs it builds it, in a scope of its
 * own under the session's, with what the layer needs taken from the start's context. A build that
 * fails or is interrupted releases what it had acquired and leaves the slot empty: the next call
 * tries again.
 */
import { Cause, Context, Effect, Exit, Layer, Scope } from "effect"
import * as Sandbox from "../Sandbox.ts"
import { SandboxInitFailed } from "../SessionError.ts"

export interface Slot {
  /** Set once built, or from the start when a built sandbox was provided. */
  sandbox: Sandbox.Service | undefined
  readonly build: ((scope: Scope.Scope) => Effect.Effect<Context.Context<Sandbox.Sandbox>, unknown>) | undefined
}

/** A sandbox that was provided built. */
export const ready = (sandbox: Sandbox.Service): Slot => ({ sandbox, build: undefined })

/** A slot that builds `layer` on first use, `context` (the start's) providing what it needs. */
export const later = <RIn>(layer: Layer.Layer<Sandbox.Sandbox, unknown, RIn>, context: Context.Context<RIn>): Slot => ({
  sandbox: undefined,
  build: (scope) => Effect.provideContext(Layer.buildWithScope(layer, scope), context)
})

/** Why a sandbox layer failed, as a person reads it. */
export const initFailed = (agent: string, cause: unknown) =>
  new SandboxInitFailed({ agent, description: cause instanceof Error ? cause.message : String(cause), cause })

/** The sandbox, built in a child of `scope` the first time. */
export const get = (slot: Slot, agent: string, scope: Scope.Scope): Effect.Effect<Sandbox.Service, SandboxInitFailed> =>
  slot.sandbox !== undefined || slot.build === undefined
    ? Effect.succeed(slot.sandbox!)
    : Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const own = yield* Scope.fork(scope)
        const exit = yield* Effect.exit(restore(slot.build!(own)))
        if (Exit.isFailure(exit)) {
          yield* Scope.close(own, exit)
          return yield* Effect.failCause(Cause.map(exit.cause, (cause) => initFailed(agent, cause)))
        }
        slot.sandbox = Context.get(exit.value, Sandbox.Sandbox)
        return slot.sandbox
      })
    )
