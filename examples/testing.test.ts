/**
 * Testing an agent with vitest: the model and the sandbox are services, so a test provides a
 * scripted `TestModel` and a `VirtualSandbox` holding the files it needs, and leaves the agent as
 * it ships. The test asserts what the agent answered and what the model was sent.
 * Run it with `vitest run` (`@effect/vitest` for `it.effect`). docs/testing.md
 */
import { Agent, Session, Tools } from "@condukt/core"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"

// The agent under test, as the program defines it.
const Summarizer = Agent.make({
  name: "summarizer",
  model: "anthropic:claude-sonnet-4-6",
  system: "Summarise the file you are given in one sentence.",
  tools: Tools.readOnly
})

const world = Layer.mergeAll(
  VirtualSandbox.layer({ files: { "notes.md": "# Notes\n- ship v2 on Friday\n" } }),
  TestModel.layer([TestModel.toolCall("Read", { path: "notes.md" }), TestModel.text("v2 ships on Friday.")])
)

describe("Summarizer", () => {
  it.effect("reads the file and answers from it", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(Summarizer)
      const result = yield* session.run("Summarise notes.md")
      assert.strictEqual(result.text, "v2 ships on Friday.")
      assert.strictEqual(result.turns, 2)

      // The second request carried the Read result, as the model would read it.
      const requests = yield* (yield* TestModel.TestModel).requests
      assert.deepStrictEqual(requests[1]!.messages.at(-1), {
        _tag: "ToolResultMessage",
        callId: "call_1",
        name: "Read",
        content: "# Notes\n- ship v2 on Friday\n",
        isError: false
      })
    }).pipe(Effect.provide(world)))
})
