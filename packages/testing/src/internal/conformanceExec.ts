/**
 * conformanceExec — the exec part of the sandbox conformance suite.
 */
import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import { outcome, ran, type Suite, under } from "./conformance.ts"

export const register = ({ capabilities, notSupported, test }: Suite): void => {
  describe("exec", () => {
    test("reports the exit code", (sandbox) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* sandbox.exec("exit 3"), ran("", 3))
        assert.deepStrictEqual(yield* sandbox.exec("true"), ran(""))
      }))

    test("returns stdout and stderr together in output", (sandbox) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* sandbox.exec("echo out; echo err >&2; exit 1"), ran("out\nerr\n", 1))
      }))

    test("shares one filesystem with the file operations", (sandbox) =>
      Effect.gen(function*() {
        yield* sandbox.writeFile("dir/written.txt", "from writeFile\n")
        const script = "cat dir/written.txt && printf 'from exec' > dir/made.txt"
        assert.deepStrictEqual(yield* sandbox.exec(script), ran("from writeFile\n"))
        assert.strictEqual(yield* sandbox.read("dir/made.txt"), "from exec")
      }))

    test("keeps no state between calls: cd and export do not persist", (sandbox) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* sandbox.exec("cd / && export X=1 && pwd"), ran("/\n"))
        assert.deepStrictEqual(yield* sandbox.exec("pwd; echo \"X=$X\""), ran(`${sandbox.cwd}\nX=\n`))
      }))

    test("runs in a per-call cwd relative to the sandbox cwd", (sandbox) =>
      Effect.gen(function*() {
        yield* sandbox.writeFile("sub/dir/here.txt", "here")
        assert.deepStrictEqual(
          yield* sandbox.exec("pwd && cat here.txt", { cwd: "sub/dir" }),
          ran(`${under(sandbox.cwd, "sub/dir")}\nhere`)
        )
      }))

    test("passes per-call env for that call only", (sandbox) =>
      Effect.gen(function*() {
        const env = { GREETING: "hello world", OTHER: "x" }
        assert.deepStrictEqual(yield* sandbox.exec("echo \"$GREETING/$OTHER\"", { env }), ran("hello world/x\n"))
        assert.deepStrictEqual(yield* sandbox.exec("echo \"[$GREETING]\""), ran("[]\n"))
      }))

    test("fails with Timeout when a command outlives its timeout, and stays usable", (sandbox) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* outcome(sandbox.exec("while true; do :; done", { timeout: "300 millis" })), {
          reason: "Timeout",
          message: "Timed out after 300ms"
        })
        assert.deepStrictEqual(yield* sandbox.exec("echo after"), ran("after\n"))
      }))

    test("on timeout, the reason carries the output so far, or none when the backend cannot tell", (sandbox) =>
      Effect.gen(function*() {
        const { reason } = yield* Effect.flip(sandbox.exec("echo before; while true; do :; done", { timeout: "500 millis" }))
        assert.strictEqual(reason._tag, "Timeout")
        if (reason._tag !== "Timeout" || reason.output === undefined) return
        assert.deepStrictEqual([reason.output, reason.truncated], ["before\n", false])
      }))
  })
}
