/**
 * Spans — a tracer for tests that keeps every span it starts, so a test can assert what was
 * traced: names, attributes, events, parents, and whether and how each span ended.
 *
 * Spans are kept in memory, in start order, as the live span objects: one still open reads
 * `Started`, and `Ended` (with its exit) once it ends. Nothing is exported, sampled away or
 * dropped, so a recorder lives as long as one test; for real tracing use an OpenTelemetry layer.
 */
import { Cause, Effect, Exit, Formatter, Tracer } from "effect"

/** @since 0.1.0 @category models */
export interface Recorder {
  /** Provide it to the effect under test: `Effect.provideService(Tracer.Tracer, recorder.tracer)`. */
  readonly tracer: Tracer.Tracer
  /** Every span started under `tracer` so far, in start order. */
  readonly spans: ReadonlyArray<Tracer.NativeSpan>
}

/**
 * A recorder with no spans yet.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Recorder> = Effect.sync(() => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { tracer, spans }
})

/**
 * Everything the spans recorded so far, as one text: each span's name, attributes, events (with
 * their attributes) and, once ended with a failure, its pretty-printed cause. What a test searches
 * for a value that must never reach a trace (a secret).
 *
 * @since 0.1.0
 * @category combinators
 */
export const text = (recorder: Recorder): string =>
  recorder.spans.map((span) => {
    const attributes = [...span.attributes].map(([key, value]) => `${key}=${Formatter.format(value)}`).join(" ")
    const events = span.events.map(([name, , attrs]) => `${name} ${Formatter.format(attrs)}`).join("; ")
    const failure = span.status._tag === "Ended" && Exit.isFailure(span.status.exit) ? Cause.pretty(span.status.exit.cause) : ""
    return `${span.name} ${attributes} ${events} ${failure}`
  }).join("\n")
