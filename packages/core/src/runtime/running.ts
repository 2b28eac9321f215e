/**
 * running — the run a session's actor runs now, and how it is stopped.
 *
 * The run is recorded before its fiber is forked (the fiber may take every step of the run before
 * the fork hands it back), so the fiber is known a little later: an abort in between is kept and
 * carried out as soon as it is.
 */
import { Effect, Fiber } from "effect"
import type { Parked } from "./Conversation.ts"
import type { RunError } from "../SessionError.ts"
import type { Run, RunResult } from "./Run.ts"

/** The run running now, and its fiber once the fork has handed it back. */
export interface Running {
  readonly run: Run
  fiber: Fiber.Fiber<RunResult | Parked, RunError> | undefined
  /** Aborted before its fiber was known: interrupted as soon as it is. */
  aborted: boolean
}

/** Interrupts the running run's fiber, waiting for it to end; one not known yet is interrupted once it is. */
export const interrupt = (running: Running): Effect.Effect<void> => {
  if (running.fiber !== undefined) return Fiber.interrupt(running.fiber)
  running.aborted = true
  return Effect.void
}

/** A queued run that goes on with a batch: a parked run answered, or one continuing a restored batch. */
export const goesOn = (run: Run) => run.continues === true || run.resume === true
