/**
 * Run — one queued or running run of a session, and what a run's steps publish through.
 *
 * A run is a plain record (its caller waits on `done`, its stream reads `sink`); the `Actor`
 * queues, serves and settles it, the `Conversation` drives it.
 */
import type { Deferred, Effect } from "effect"
import type { RunOptions, RunResult } from "../../Session.ts"
import type { RunError } from "../../SessionError.ts"
import type * as SessionEvent from "../../SessionEvent.ts"
import type * as EventHub from "./eventHub.ts"

/** One queued or running run. */
export interface Run {
  readonly id: string
  readonly prompt: string
  readonly options: RunOptions | undefined
  readonly done: Deferred.Deferred<RunResult, RunError>
  /** The run's own stream, when it was started by `stream`. */
  readonly sink: EventHub.Sink | undefined
}

/** Where a run's steps publish its events: the session's actor. */
export interface Publisher {
  /**
   * Numbers and delivers one event: into `run` (waiting for a slow stream reader with `wait`), or
   * between runs (no run) to the observers, with an empty run id.
   */
  readonly publish: (run: Run | undefined, payload: SessionEvent.Payload, wait?: boolean) => Effect.Effect<void>
}
