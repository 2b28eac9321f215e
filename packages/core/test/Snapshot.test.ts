import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as Message from "../src/Message.ts"
import * as Snapshot from "../src/Snapshot.ts"
import { snapshot } from "@condukt/testing/SessionStoreConformance"

describe("Snapshot", () => {
  it("decodes a snapshot of the current version as it was written", () => {
    const written = JSON.parse(JSON.stringify(snapshot("s1", 2)))
    assert.deepStrictEqual(Snapshot.decode(written, "s1"), Result.succeed(snapshot("s1", 2)))
  })

  it("decodes a batch with its started calls, and one written before calls' starts were recorded", () => {
    const batch = { waiting: [], results: [{ callId: "c1", content: "ok", isError: false }], started: ["c2"] }
    const written = JSON.parse(JSON.stringify({ ...snapshot("s1", 2), batch }))
    assert.deepStrictEqual(Snapshot.decode(written, "s1"), Result.succeed({ ...snapshot("s1", 2), batch }))
    const older = { waiting: [{ callId: "c3", tool: "rm", input: { path: "/" } }], results: [] }
    assert.deepStrictEqual(Snapshot.decode({ ...written, batch: older }, "s1"), Result.succeed({ ...snapshot("s1", 2), batch: older }))
  })

  it("migrates a version 1 record (no version: messages, model, system) to the current version", () => {
    const v1 = { messages: [Message.user("hi")], model: "anthropic:claude", system: "Be brief." }
    assert.deepStrictEqual(
      Snapshot.decode(v1, "s1"),
      Result.succeed(Snapshot.make({
        id: "s1",
        agent: "",
        model: "anthropic:claude",
        system: "Be brief.",
        messages: [Message.user("hi")],
        assigns: {},
        createdAt: 0,
        updatedAt: 0
      }))
    )
  })

  it("refuses a newer version, saying which and what this one reads", () => {
    const decoded = Snapshot.decode({ ...snapshot("s1", 1), version: 3 }, "s1")
    assert.isTrue(Result.isFailure(decoded))
    if (Result.isFailure(decoded)) {
      assert.strictEqual(decoded.failure.message, "snapshot version 3 is newer than this Condukt reads (2); upgrade to resume it")
    }
  })

  it("calls anything else corrupt, naming the field", () => {
    const notObject = Snapshot.decode([1, 2], "s1")
    const badField = Snapshot.decode({ ...snapshot("s1", 1), assigns: "x" }, "s1")
    assert.deepStrictEqual(Result.isFailure(notObject) ? notObject.failure.message : "", "not a session snapshot (expected a JSON object)")
    assert.deepStrictEqual(
      Result.isFailure(badField) ? badField.failure.message : "",
      "not a session snapshot (Expected object at [\"assigns\"])"
    )
  })
})
