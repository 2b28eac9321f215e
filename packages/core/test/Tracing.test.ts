/** tracing: a span only when the fiber's tracer exports spans, the same span as `Effect.withSpan` otherwise. */
import { Spans } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Option, Tracer } from "effect"
import * as Tracing from "../src/Tracing.ts"

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

  it.effect("spanOf works out nothing under Effect's default tracer", () =>
    Effect.gen(function*() {
      let described = 0
      const value = yield* Tracing.spanOf(Effect.succeed(42), () => {
        described++
        return ["Test.op", {}]
      }, { ended: () => ({ late: 1 }) })
      assert.deepStrictEqual([value, described], [42, 0])
    }))

  it.effect("spanOf sets the attributes of the success before the span ends, and records a failure as rewritten", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* Spans.make
      const hooks = { ended: (n: number) => ({ late: n }), failed: () => Cause.fail("hidden") }
      yield* Tracing.spanOf(Effect.succeed(7), () => ["Test.ok", { attributes: { early: 1 } }], hooks).pipe(Effect.provideService(Tracer.Tracer, tracer))
      const failure = yield* Effect.flip(
        Tracing.spanOf(Effect.fail("the secret"), () => ["Test.failed", {}], hooks).pipe(Effect.provideService(Tracer.Tracer, tracer))
      )
      assert.strictEqual(failure, "hidden")
      assert.deepStrictEqual(spans.map((span) => [span.name, Object.fromEntries(span.attributes)]), [["Test.ok", { early: 1, late: 7 }], ["Test.failed", {}]])
      assert.notInclude(Spans.text({ spans, tracer }), "the secret")
    }))
})
