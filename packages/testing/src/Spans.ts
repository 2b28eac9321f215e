/**
 * Spans — a tracer for tests that keeps every span it starts, so a test can assert what was
 * traced: names, attributes, events, parents, and whether and how each span ended.
 *
 * Spans are kept in memory, in start order, as the live span objects: one still open reads
 * `Started`, and `Ended` (with its exit) once it ends. Nothing is exported, sampled away or
 * dropped, so a recorder lives as long as one test; for real tracing use an OpenTelemetry layer.
 */
import { Effect, Tracer } from "effect"

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
