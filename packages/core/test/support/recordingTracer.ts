/** A tracer for tests that records every span it makes, so a test can assert names, attributes and parents. */
import { Tracer } from "effect"

export const recordingTracer = () => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { spans, tracer }
}
