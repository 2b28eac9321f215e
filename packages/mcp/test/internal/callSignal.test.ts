/**
 * CallSignal: what the SDK reads of a request's abort signal — `aborted`, `reason`, listeners
 * added and removed — behaves as an AbortSignal's does. A call interrupted through it sends
 * `notifications/cancelled`: McpClient.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { CallSignal } from "../../src/internal/callSignal.ts"

describe("CallSignal", () => {
  it("abort fires each listener still added once, with the reason readable; later aborts and listeners do nothing", () => {
    const signal = new CallSignal()
    const heard: Array<string> = []
    const kept = () => heard.push(`kept ${String(signal.reason)}`)
    const removed = () => heard.push("removed")
    signal.addEventListener("abort", kept)
    signal.addEventListener("abort", removed)
    signal.removeEventListener("abort", removed)
    assert.isFalse(signal.aborted)
    signal.throwIfAborted()
    signal.abort("interrupted")
    signal.abort("again")
    signal.addEventListener("abort", () => heard.push("late"))
    assert.isTrue(signal.aborted)
    assert.strictEqual(signal.reason, "interrupted")
    assert.deepStrictEqual(heard, ["kept interrupted"])
    assert.throws(() => signal.throwIfAborted())
  })

  it("an AbortController linked to it, as the SDK's input_required flow links one, is aborted with it", () => {
    const signal = new CallSignal()
    const linked = new AbortController()
    signal.asAbortSignal.addEventListener("abort", () => linked.abort(signal.reason), { once: true })
    signal.abort("gone")
    assert.isTrue(linked.signal.aborted)
    assert.strictEqual(linked.signal.reason, "gone")
  })
})
