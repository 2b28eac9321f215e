/**
 * The spans of a run under a real tracer: a run is `invoke_agent <agent>`, its Bash call
 * `execute_tool Bash` holding `Bash.call` (with the names of the secrets it received), and the
 * command `LocalSandbox.exec`, each the parent of the next. Under Effect's default tracer none of them is made (Tracing.ts).
 */
import { Spans, TempDir, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option, Tracer } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as Condukt from "../../src/Condukt.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import * as Secret from "@condukt/core/Secret"
import * as Session from "@condukt/core/Session"
import * as Tools from "@condukt/core/Tools"

const tempDir = TempDir.make("condukt-tracing-")

describe("Session tracing", () => {
  it.live("a run with a Bash call is invoke_agent > execute_tool Bash > Bash.call (naming its secrets) > LocalSandbox.exec", () =>
    Effect.flatMap(Spans.make, ({ spans, tracer }) =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const agent = Agent.make({ name: "traced", model: "test:x", tools: [Tools.Bash], secrets: { API_TOKEN: Secret.env("UPSTREAM_TOKEN") } })
      const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd: dir }), projectInstructions: false })
      const result = yield* session.run("go")
      assert.strictEqual(result.text, "done")
      const byName = (name: string) => spans.find((span) => span.name === name)!
      const [run, call, exec] = [byName("invoke_agent traced"), byName("Bash.call"), byName("LocalSandbox.exec")]
      assert.deepStrictEqual(
        [run, call, exec].map((span) => ({ name: span.name, ended: span.status._tag === "Ended" })),
        [{ name: "invoke_agent traced", ended: true }, { name: "Bash.call", ended: true }, { name: "LocalSandbox.exec", ended: true }]
      )
      assert.strictEqual(run.attributes.get("sessionId"), session.id)
      assert.strictEqual(typeof run.attributes.get("runId"), "string")
      assert.strictEqual(call.attributes.get("condukt.secrets"), "API_TOKEN")
      assert.strictEqual(Option.getOrUndefined(exec.parent)?.spanId, call.spanId)
      // The call's span sits in its `execute_tool Bash`, a child of the run's.
      const tool = byName("execute_tool Bash")
      assert.strictEqual(Option.getOrUndefined(call.parent)?.spanId, tool.spanId)
      assert.strictEqual(Option.getOrUndefined(tool.parent)?.spanId, run.spanId)
    }).pipe(
      Effect.scoped,
      Effect.provideService(Tracer.Tracer, tracer),
      Effect.provide(Layer.mergeAll(
        TestModel.layer([TestModel.toolCall("Bash", { command: "true" }), TestModel.text("done")]),
        Condukt.layer,
        ConfigProvider.layer(ConfigProvider.fromUnknown({ UPSTREAM_TOKEN: "tok" }))
      ))
    )))
})
