/**
 * Tracing — the spans a run holds while it waits, made only when a tracer can read them.
 *
 * A span around a step that may wait (a run, a Bash call, a sandbox `exec` queued for a process
 * permit) is held for the whole wait: the span and its attributes, the two `Context` copies that
 * make it the parent of what runs inside, its end hook, and with `Effect.fn` a call-site `Error`
 * and a stack frame — about 1 KB each, three per Bash call waiting its turn, 10,000 calls waiting
 * at once (docs/decisions/0036, "In flight"). Under Effect's default tracer (`Tracer.nativeTracer`)
 * nothing exports a span and nothing on these paths reads one, so none is made; with a tracer
 * installed the span is made as `Effect.withSpan` makes it, same name and attributes (as
 * `McpClient.tools/call` does, docs/decisions/0028).
 */
import { type Cause, Effect, type Fiber, Tracer } from "effect"

/** `self` in a span named `name` when the fiber's tracer exports spans; `self` alone otherwise. */
export const span = <A, E, R>(self: Effect.Effect<A, E, R>, name: string, options?: Tracer.SpanOptions): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer ? self : Effect.withSpan(self, name, options))

/** Hooks of a span made by `spanOf` or `within`. */
export interface Hooks<A, E> {
  /** Attributes known only from the success (a reply's usage), set before the span ends. */
  readonly ended?: ((value: A) => Readonly<Record<string, unknown>>) | undefined
  /** Rewrites a failure before the span records it (a session's redaction). */
  readonly failed?: ((cause: Cause.Cause<E>) => Cause.Cause<E>) | undefined
}

/** Whether `fiber`'s tracer exports spans: a step that knows it once (a run) skips the check per turn. */
export const isTraced = (fiber: Fiber.Fiber<unknown, unknown>): boolean => fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer

/** `self` in a span, made whatever the tracer: for a caller that checked `isTraced` already. */
export const within = <A, E, R>(self: Effect.Effect<A, E, R>, name: string, options: Tracer.SpanOptions, hooks: Hooks<A, E>): Effect.Effect<A, E, R> => {
  const { ended, failed } = hooks
  // Attributes that cannot be made (a value that throws when written) are left out: a span's
  // attribute is no reason to fail what it observed.
  const annotated = ended === undefined
    ? self
    : Effect.tap(self, (value) => Effect.ignore(Effect.flatMap(Effect.try(() => ended(value)), (attributes) => Effect.annotateCurrentSpan(attributes))))
  const rewritten = failed === undefined ? annotated : Effect.catchCause(annotated, (cause) => Effect.failCause(failed(cause)))
  return Effect.withSpan(rewritten, name, options)
}

/**
 * `span` for a step on the per-turn path (a tool call): its name and attributes are worked out
 * only when a span is made.
 */
export const spanOf = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  describe: () => readonly [name: string, options: Tracer.SpanOptions],
  hooks: Hooks<A, E> = {}
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (!isTraced(fiber)) return self
    const [name, options] = describe()
    return within(self, name, options, hooks)
  })
