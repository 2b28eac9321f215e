/** tracing: a span only when the fiber's tracer exports spans, the same span as `Effect.withSpan` otherwise. */
import { Spans } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Tracer } from "effect"
import * as Tracing from "../../src/internal/tracing.ts"

describe("tracing", () => {
  it.effect("makes no span under Effect's default tracer: the effect runs as it is", () =>
    Effect.gen(function*() {
      const inside = yield* Tracing.span(Effect.option(Effect.currentSpan), "Test.op", { attributes: { a: 1 } })
      assert.isTrue(Option.isNone(inside))
      assert.strictEqual(yield* Tracing.span(Effect.succeed(42), "Test.op"), 42)
    }))

  it.effect("with a tracer installed, makes the span with its name and attributes, parent of what runs inside, and ends it", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* Spans.make
      const inside = yield* Tracing.span(Effect.map(Effect.currentSpan, (span) => span.name), "Test.op", { attributes: { a: 1 } })
        .pipe(Effect.provideService(Tracer.Tracer, tracer))
      assert.strictEqual(inside, "Test.op")
      assert.deepStrictEqual(
        spans.map((span) => ({ name: span.name, attributes: Object.fromEntries(span.attributes), ended: span.status._tag === "Ended" })),
        [{ name: "Test.op", attributes: { a: 1 }, ended: true }]
      )
    }))
})
