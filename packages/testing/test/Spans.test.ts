import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option, Tracer } from "effect"
import * as Spans from "../src/Spans.ts"

describe("Spans", () => {
  it.effect("keeps every span in start order, with its attributes, parent and exit", () =>
    Effect.gen(function*() {
      const recorder = yield* Spans.make
      const inner = Effect.annotateCurrentSpan("rows", 3).pipe(Effect.withSpan("Store.count", { attributes: { table: "users" } }))
      const failing = Effect.fail("no database").pipe(Effect.withSpan("Store.open"))
      yield* Effect.exit(Effect.andThen(inner, failing).pipe(
        Effect.withSpan("Job.run"),
        Effect.provideService(Tracer.Tracer, recorder.tracer)
      ))
      assert.deepStrictEqual(
        recorder.spans.map((span) => [span.name, Object.fromEntries(span.attributes), span.status._tag]),
        [["Job.run", {}, "Ended"], ["Store.count", { table: "users", rows: 3 }, "Ended"], ["Store.open", {}, "Ended"]]
      )
      const [run, count, open] = recorder.spans
      assert.deepStrictEqual([Option.getOrUndefined(count!.parent), Option.getOrUndefined(open!.parent)], [run, run])
      assert.isTrue(open!.status._tag === "Ended" && Exit.isFailure(open!.status.exit))
      assert.isTrue(count!.status._tag === "Ended" && Exit.isSuccess(count!.status.exit))
    }))

  it.effect("shows a span that has not ended yet as started, then as ended", () =>
    Effect.gen(function*() {
      const recorder = yield* Spans.make
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const fiber = yield* Effect.forkChild(
        Effect.andThen(Deferred.succeed(started, undefined), Deferred.await(release)).pipe(
          Effect.withSpan("Session.run"),
          Effect.provideService(Tracer.Tracer, recorder.tracer)
        ),
        { startImmediately: true }
      )
      yield* Deferred.await(started)
      assert.deepStrictEqual(recorder.spans.map((span) => [span.name, span.status._tag]), [["Session.run", "Started"]])
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(recorder.spans.map((span) => [span.name, span.status._tag]), [["Session.run", "Ended"]])
    }))

  it.effect("records only what runs under its tracer", () =>
    Effect.gen(function*() {
      const recorder = yield* Spans.make
      const other = yield* Spans.make
      yield* Effect.void.pipe(Effect.withSpan("mine"), Effect.provideService(Tracer.Tracer, recorder.tracer))
      yield* Effect.void.pipe(Effect.withSpan("theirs"), Effect.provideService(Tracer.Tracer, other.tracer))
      yield* Effect.void.pipe(Effect.withSpan("nobody's"))
      assert.deepStrictEqual([recorder.spans.map((span) => span.name), other.spans.map((span) => span.name)], [["mine"], ["theirs"]])
    }))

  it.effect("text holds every name, attribute, event and failure the spans recorded", () =>
    Effect.gen(function*() {
      const recorder = yield* Spans.make
      yield* Effect.exit(Effect.fail(new Error("refused: key-123")).pipe(
        Effect.withSpan("Model.stream", { attributes: { provider: "anthropic" } }),
        Effect.provideService(Tracer.Tracer, recorder.tracer)
      ))
      yield* Effect.void.pipe(
        Effect.tap(() => Effect.currentSpan.pipe(Effect.map((span) => span.event("retry", 1n, { attempt: 2 })))),
        Effect.withSpan("Session.run"),
        Effect.provideService(Tracer.Tracer, recorder.tracer)
      )
      const [stream, run] = Spans.text(recorder).split("\n").filter((line) => !line.startsWith("    at "))
      assert.strictEqual(stream, `Model.stream provider="anthropic"  Error: refused: key-123`)
      assert.strictEqual(run, `Session.run  retry {"attempt":2} `)
    }))
})
