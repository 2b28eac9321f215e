import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Result, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as CallDeadline from "../src/CallDeadline.ts"
import * as Executor from "../src/Executor.ts"
import * as Message from "../src/Message.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Tool from "../src/Tool.ts"

const context = {
  sessionId: "s1",
  agent: "tester",
  sandbox: Sandbox.makeNoop(),
  cwd: "/",
  secrets: {}
}
const calls = (...names: ReadonlyArray<readonly [string, unknown]>): Array<Executor.Call> =>
  names.map(([name, input], i) => ({ id: `call_${i + 1}`, name, input }))

const NoArgs = Schema.Struct({})

/** The executor of tools whose names are known to be unique. */
const compile = <R>(tools: ReadonlyArray<Tool.Tool<R>>, options?: Executor.Options) =>
  Result.getOrThrow(Executor.make(tools, options))

describe("Executor", () => {
  it.live("keeps model order: concurrent neighbours overlap, a non-concurrent call runs alone", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const aStarted = yield* Deferred.make<void>()
      const bStarted = yield* Deferred.make<void>()
      // a and b each wait for the other to start: they can only finish if they overlap.
      const waiter = (name: string, mine: Deferred.Deferred<void>, theirs: Deferred.Deferred<void>) =>
        Tool.make(name, {
          description: name,
          parameters: NoArgs,
          call: () =>
            Effect.gen(function*() {
              log.push(`start ${name}`)
              yield* Deferred.succeed(mine, undefined)
              yield* Deferred.await(theirs)
              log.push(`end ${name}`)
              return name
            })
        })
      const step = (name: string, concurrent: boolean) =>
        Tool.make(name, {
          description: name,
          parameters: NoArgs,
          concurrent,
          call: () =>
            Effect.sync(() => log.push(`start ${name}`)).pipe(
              Effect.andThen(Effect.yieldNow),
              Effect.andThen(Effect.sync(() => log.push(`end ${name}`))),
              Effect.as(name)
            )
        })
      const executor = compile(
        [waiter("a", aStarted, bStarted), waiter("b", bStarted, aStarted), step("c", false), step("d", true)],
        { timeout: "5 seconds" }
      )
      const outcome = yield* executor.run(calls(["a", {}], ["b", {}], ["c", {}], ["d", {}]), context, {})

      assert.deepStrictEqual(outcome.results.map((r) => [r.callId, r.content, r.isError]), [
        ["call_1", "a", false],
        ["call_2", "b", false],
        ["call_3", "c", false],
        ["call_4", "d", false]
      ])
      assert.deepStrictEqual(log.slice(0, 2).sort(), ["start a", "start b"])
      assert.deepStrictEqual(log.slice(2, 4).sort(), ["end a", "end b"])
      assert.deepStrictEqual(log.slice(4), ["start c", "end c", "start d", "end d"])
    }))

  it.live("bounds the parallelism of a concurrent group", () =>
    Effect.gen(function*() {
      let running = 0
      let peak = 0
      const busy = Tool.make("busy", {
        description: "busy",
        parameters: NoArgs,
        call: () =>
          Effect.sync(() => {
            running++
            peak = Math.max(peak, running)
          }).pipe(Effect.andThen(Effect.yieldNow), Effect.andThen(Effect.yieldNow), Effect.ensuring(Effect.sync(() => running--)))
      })
      const executor = compile([busy], { concurrency: 2 })
      yield* executor.run(calls(...Array.from({ length: 6 }, () => ["busy", {}] as const)), context, {})
      assert.strictEqual(peak, 2)
    }))

  it.effect("gives each failing call its own error result while the others succeed", () =>
    Effect.gen(function*() {
      const ok = Tool.make("ok", { description: "ok", parameters: NoArgs, call: () => Effect.succeed("fine") })
      const throws = Tool.make("throws", {
        description: "throws",
        parameters: NoArgs,
        call: () => {
          throw new Error("boom")
        }
      })
      const throwsInside = Tool.make("throws_inside", {
        description: "throws inside an Effect",
        parameters: NoArgs,
        call: () =>
          Effect.sync(() => {
            throw new RangeError("index 9 out of range")
          })
      })
      const dies = Tool.make("dies", { description: "dies", parameters: NoArgs, call: () => Effect.die(new Error("kaput")) })
      const hangs = Tool.make("hangs", { description: "hangs", parameters: NoArgs, timeout: "250 millis", call: () => Effect.never })
      const fails = Tool.make("fails", {
        description: "fails",
        parameters: NoArgs,
        call: () => Effect.fail("the database is locked")
      })
      const failsTyped = Tool.make("fails_typed", {
        description: "fails with a typed error",
        parameters: NoArgs,
        call: () => Effect.fail(new Tool.InvalidArguments({ tool: "x", issues: [{ path: "a", message: "bad" }] }))
      })
      const interrupted = Tool.make("interrupted", { description: "interrupted", parameters: NoArgs, call: () => Effect.interrupt })
      const typed = Tool.make("typed", {
        description: "typed",
        parameters: Schema.Struct({ path: Schema.String, limit: Schema.optionalKey(Schema.Int) }),
        call: ({ path }) => Effect.succeed(path)
      })
      const executor = compile([ok, throws, throwsInside, dies, hangs, fails, failsTyped, interrupted, typed])
      const fiber = yield* Effect.forkChild(
        executor.run(
          calls(
            ["ok", {}],
            ["throws", {}],
            ["throws_inside", {}],
            ["dies", {}],
            ["hangs", {}],
            ["fails", {}],
            ["fails_typed", {}],
            ["interrupted", {}],
            ["typed", { path: 1, limit: 1.5, extra: true }],
            ["typed", "not an object"],
            ["nope", {}],
            ["typed", { path: "a.txt" }]
          ),
          context,
          {}
        )
      )
      yield* TestClock.adjust("1 second")
      const outcome = yield* Fiber.join(fiber)
      assert.deepStrictEqual(outcome.results.map((r) => [r.callId, r.name, r.isError, r.content]), [
        ["call_1", "ok", false, "fine"],
        ["call_2", "throws", true, "Tool throws crashed: boom"],
        ["call_3", "throws_inside", true, "Tool throws_inside crashed: index 9 out of range"],
        ["call_4", "dies", true, "Tool dies crashed: kaput"],
        ["call_5", "hangs", true, "Tool hangs timed out after 250ms"],
        ["call_6", "fails", true, "Error: the database is locked"],
        ["call_7", "fails_typed", true, "Error: Invalid arguments for tool x: a: bad"],
        ["call_8", "interrupted", true, "Tool interrupted was interrupted"],
        [
          "call_9",
          "typed",
          true,
          "Invalid arguments for tool typed: extra: Expected no excess property; path: Expected string; limit: Expected an integer"
        ],
        ["call_10", "typed", true, "Invalid arguments for tool typed: Expected object"],
        ["call_11", "nope", true, "Unknown tool: nope"],
        ["call_12", "typed", false, "a.txt"]
      ])
    }))

  it.effect("encodes JSON values, keeps structured data out of the text and truncates 80/20", () =>
    Effect.gen(function*() {
      const json = Tool.make("json", { description: "json", parameters: NoArgs, call: () => Effect.succeed({ a: [1, "b", null] }) })
      const nothing = Tool.make("nothing", { description: "void", parameters: NoArgs, call: () => Effect.void })
      const structured = Tool.make("structured", {
        description: "structured",
        parameters: NoArgs,
        resultType: "structured",
        call: () => Effect.succeed(Tool.structured("3 rows", { rows: [1, 2, 3] }))
      })
      const long = Tool.make("long", {
        description: "long",
        parameters: NoArgs,
        maxResultChars: 100,
        call: () => Effect.succeed("x".repeat(500))
      })
      const emoji = Tool.make("emoji", {
        description: "emoji",
        parameters: NoArgs,
        maxResultChars: 5,
        call: () => Effect.succeed("😀".repeat(5) + "🎉".repeat(5))
      })
      const exact = Tool.make("exact", {
        description: "exact",
        parameters: NoArgs,
        maxResultChars: 3,
        call: () => Effect.succeed("abc")
      })
      const failsLong = Tool.make("fails_long", {
        description: "errors are never truncated",
        parameters: NoArgs,
        maxResultChars: 3,
        call: () => Effect.fail("a long failure")
      })
      const executor = compile([json, nothing, structured, long, emoji, exact, failsLong])
      const { results } = yield* executor.run(
        calls(["json", {}], ["nothing", {}], ["structured", {}], ["long", {}], ["emoji", {}], ["exact", {}], ["fails_long", {}]),
        context,
        {}
      )
      assert.deepStrictEqual(results.map((r) => r.content), [
        `{"a":[1,"b",null]}`,
        "",
        "3 rows",
        "x".repeat(80) + "\n\n[truncated 500 -> 100 chars]\n\n" + "x".repeat(20),
        "😀😀😀😀\n\n[truncated 10 -> 5 chars]\n\n🎉",
        "abc",
        "Error: a long failure"
      ])
      assert.deepStrictEqual(results[2]!.data, { rows: [1, 2, 3] })
      assert.isFalse("data" in results[0]!)
    }))

  it.effect("passes a result's images on beside its text, which is redacted as any text", () =>
    Effect.gen(function*() {
      const image = Message.imagePart("image/png", "iVBORw0KGgo=")
      const picture = Tool.make("picture", {
        description: "picture",
        parameters: NoArgs,
        call: () => Effect.succeed(Tool.images("Image of s3cret", [image]))
      })
      const { results } = yield* compile([picture]).run(calls(["picture", {}]), { ...context, redact: (text) => text.replace("s3cret", "[REDACTED]") }, {})
      assert.deepStrictEqual(results, [{ callId: "call_1", name: "picture", content: "Image of [REDACTED]", isError: false, images: [image] }])
    }))

  it.effect("all calls of a message see one snapshot; patches merge after it in call order", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const setter = (name: string, patch: Record<string, unknown>) =>
        Tool.make(name, {
          description: name,
          parameters: NoArgs,
          call: (_, { assigns }) => {
            seen.push({ ...assigns })
            return Effect.succeed(Tool.assign(`${name} done`, patch))
          }
        })
      const plain = Tool.make("plain", {
        description: "plain",
        parameters: NoArgs,
        call: (_, { assigns }) => Effect.succeed(JSON.stringify(assigns))
      })
      const executor = compile([setter("first", { n: 1, who: "first" }), setter("second", { n: 2 }), plain])
      const outcome = yield* executor.run(
        calls(["first", {}], ["second", {}], ["plain", {}]),
        context,
        { n: 0, tenant: "acme" }
      )
      assert.deepStrictEqual(seen, [{ n: 0, tenant: "acme" }, { n: 0, tenant: "acme" }])
      assert.deepStrictEqual(outcome.results.map((r) => r.content), [
        "first done",
        "second done",
        `{"n":0,"tenant":"acme"}`
      ])
      assert.deepStrictEqual(outcome.assigns, { n: 2, who: "first", tenant: "acme" })

      const next = yield* executor.run(calls(["plain", {}]), context, outcome.assigns)
      assert.strictEqual(next.results[0]!.content, `{"n":2,"tenant":"acme","who":"first"}`)
      assert.deepStrictEqual(next.assigns, outcome.assigns)
    }))

  it.effect("interrupting the run interrupts the running tools and runs their finalizers", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const released: Array<string> = []
      const slow = Tool.make("slow", {
        description: "slow",
        parameters: NoArgs,
        call: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Effect.sync(() => released.push("slow released")))
          )
      })
      const executor = compile([slow])
      const fiber = yield* Effect.forkChild(executor.run(calls(["slow", {}]), context, {}))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(released, ["slow released"])
    }))

  it.effect("a tool's own timeout, read from its arguments, wins over the default, plus a margin", () =>
    Effect.gen(function*() {
      const Seconds = Schema.Struct({ seconds: Schema.Int })
      const waits = Tool.make("waits", {
        description: "waits",
        parameters: Seconds,
        timeout: ({ seconds }) => Duration.seconds(seconds),
        // Past its own deadline the tool would answer by itself; this one never does.
        call: () => Effect.never
      })
      const executor = compile([waits], { timeout: "1 second" })
      const fiber = yield* Effect.forkChild(executor.run(calls(["waits", { seconds: 3600 }]), context, {}))
      yield* TestClock.adjust(Duration.sum(Duration.seconds(3600), Executor.OWN_TIMEOUT_MARGIN))
      const { results } = yield* Fiber.join(fiber)
      assert.deepStrictEqual(results.map((r) => r.content), ["Tool waits timed out after 3605000ms"])
    }))

  it.effect("a tool without a deadline (timeout: Duration.infinity) runs as long as it takes, holds included", () =>
    Effect.gen(function*() {
      const done = yield* Deferred.make<void>()
      const patient = Tool.make("patient", {
        description: "waits for the test",
        parameters: NoArgs,
        timeout: Duration.infinity,
        call: () => Effect.as(Effect.flatMap(CallDeadline.CallDeadline, (d) => d.hold(Deferred.await(done))), "finished")
      })
      const fiber = yield* Effect.forkChild(compile([patient], { timeout: "1 second" }).run(calls(["patient", {}]), context, {}))
      yield* TestClock.adjust("3650 days")
      yield* Deferred.succeed(done, undefined)
      const { results } = yield* Fiber.join(fiber)
      assert.deepStrictEqual(results.map((r) => r.content), ["finished"])
    }))

  it.effect("time a call spends waiting its turn (CallDeadline.hold) is not counted against its timeout", () =>
    Effect.gen(function*() {
      const turn = yield* Deferred.make<void>()
      const queued = Tool.make("queued", {
        description: "waits its turn, then works for 2 seconds",
        parameters: NoArgs,
        timeout: "3 seconds",
        call: () =>
          Effect.gen(function*() {
            const deadline = yield* CallDeadline.CallDeadline
            yield* deadline.hold(Deferred.await(turn))
            yield* Effect.sleep("2 seconds")
            return "worked"
          })
      })
      const slow = Tool.make("slow", {
        description: "waits its turn, then works for 4 seconds",
        parameters: NoArgs,
        timeout: "3 seconds",
        call: () => Effect.andThen(Effect.flatMap(CallDeadline.CallDeadline, (d) => d.hold(Deferred.await(turn))), Effect.sleep("4 seconds"))
      })
      const fiber = yield* Effect.forkChild(compile([queued, slow]).run(calls(["queued", {}], ["slow", {}]), context, {}))
      yield* TestClock.adjust("1 minute")
      yield* Deferred.succeed(turn, undefined)
      yield* TestClock.adjust("3 seconds")
      const { results } = yield* Fiber.join(fiber)
      assert.deepStrictEqual(results.map((r) => r.content), ["worked", "Tool slow timed out after 3000ms"])
    }))

  it.effect("describes a defect that is not an Error without [object Object]", () =>
    Effect.gen(function*() {
      const odd = Tool.make("odd", { description: "odd", parameters: NoArgs, call: () => Effect.die({ code: 7, why: ["x"] }) })
      const big = Tool.make("big", { description: "big", parameters: NoArgs, call: () => Effect.succeed({ n: 1n } as never) })
      const { results } = yield* compile([odd, big]).run(calls(["odd", {}], ["big", {}]), context, {})
      assert.deepStrictEqual(results.map((r) => r.content), [
        `Tool odd crashed: {"code":7,"why":["x"]}`,
        "Tool big crashed: Do not know how to serialize a BigInt"
      ])
    }))

  it("refuses two tools with the same name with a typed error", () => {
    const a = Tool.make("dup", { description: "a", parameters: NoArgs, call: () => Effect.succeed("a") })
    const made = Executor.make([a, a])
    assert.isTrue(Result.isFailure(made))
    assert.strictEqual(
      Result.isFailure(made) && made.failure.message,
      "Two tools are named dup: tool names must be unique (rename one, or give a prefix)"
    )
  })

  it.effect("refuses a call from a caller the tool does not allow, with a sentence the model can act on", () =>
    Effect.gen(function*() {
      const direct = Tool.make("direct_only", { description: "d", parameters: NoArgs, call: () => Effect.succeed("ran") })
      const coded = Tool.make("code_only", {
        description: "c",
        parameters: NoArgs,
        allowedCallers: ["code_execution"],
        call: () => Effect.succeed("ran")
      })
      const { results } = yield* compile([direct, coded]).run([
        { id: "1", name: "direct_only", input: {}, caller: "code_execution" },
        { id: "2", name: "code_only", input: {} },
        { id: "3", name: "code_only", input: {}, caller: "code_execution" }
      ], context, {})
      assert.deepStrictEqual(results.map((r) => [r.content, r.isError]), [
        ["Tool direct_only cannot be called from code execution: call it directly", true],
        ["Tool code_only cannot be called directly: call it from code execution", true],
        ["ran", false]
      ])
    }))

  it.effect("a structured tool answers code execution with its data as JSON and the model with its text", () =>
    Effect.gen(function*() {
      const both = Tool.make("rows", {
        description: "r",
        parameters: NoArgs,
        allowedCallers: ["human", "code_execution"],
        resultType: "structured",
        call: () => Effect.succeed(Tool.structured("3 rows", { rows: 3 }))
      })
      const { results } = yield* compile([both]).run([
        { id: "1", name: "rows", input: {} },
        { id: "2", name: "rows", input: {}, caller: "code_execution" }
      ], context, {})
      assert.deepStrictEqual(results.map((r) => [r.content, r.data]), [["3 rows", { rows: 3 }], [`{"rows":3}`, { rows: 3 }]])
    }))
})
