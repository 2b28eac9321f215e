/** Bash through a real LocalSandbox: real processes, exit codes, cwd, secrets, statelessness, limits. */
import { Spans, ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted, Tracer } from "effect"
import { Bash } from "@condukt/core/tools/Bash"
import { localContext } from "./context.ts"

describe("Bash", () => {
  it.effect("defaults the timeout to 120 seconds and refuses absurd ones", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* Bash.decode({ command: "true" }), { command: "true", timeout: 120 })
      const { context } = yield* localContext()
      for (const timeout of [0, -1, 1e9]) {
        assert.strictEqual(
          yield* ToolCall.failure(Bash, { command: "true", timeout }, context),
          "Invalid arguments for tool Bash: timeout: Expected a value between 1 and 3600"
        )
      }
    }))

  it.live("returns the output of a successful command as is", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext()
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "echo hello" }, context), "hello\n")
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "true" }, context), "")
    }))

  it.live("reports a non-zero exit code as a result, not a failure", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext()
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "echo oops; exit 3" }, context), "oops\n\n(exit code: 3)")
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "exit 1" }, context), "(exit code: 1)")
    }))

  it.live("with a tracer installed, a call is a span Bash.call whose child is LocalSandbox.exec", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext()
      const { spans, tracer } = yield* Spans.make
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "echo traced" }, context).pipe(Effect.provideService(Tracer.Tracer, tracer)), "traced\n")
      const [call, exec] = spans
      assert.deepStrictEqual(spans.map((span) => [span.name, span.status._tag]), [["Bash.call", "Ended"], ["LocalSandbox.exec", "Ended"]])
      assert.strictEqual(Option.getOrUndefined(exec!.parent)?.spanId, call!.spanId)
    }))

  it.live("merges stderr into the output", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext()
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "echo out; echo err >&2" }, context), "out\nerr\n")
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "echo bad >&2; exit 2" }, context), "bad\n\n(exit code: 2)")
    }))

  it.live("runs in the sandbox directory, or in cwd relative to it", () =>
    Effect.gen(function*() {
      const { context, dir } = yield* localContext({ "sub/f.txt": "" })
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "pwd" }, context), `${dir}\n`)
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "pwd; ls", cwd: "sub" }, context), `${dir}/sub\nf.txt\n`)
    }))

  it.live("keeps no state between calls: cd and export do not persist", () =>
    Effect.gen(function*() {
      const { context, dir } = yield* localContext({ "sub/f.txt": "" })
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "cd sub && export FOO=bar && pwd" }, context), `${dir}/sub\n`)
      assert.strictEqual(yield* ToolCall.run(Bash, { command: 'pwd; echo "FOO=$FOO"' }, context), `${dir}\nFOO=\n`)
    }))

  it.live("puts the session's secrets in the environment", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({}, { secrets: { API_TOKEN: Redacted.make("s3cret-value") } })
      // The process has the value; what it prints of it reaches the model redacted.
      assert.strictEqual(yield* ToolCall.run(Bash, { command: '[ "$API_TOKEN" = s3cret-value ] && echo "$API_TOKEN"' }, context), "[REDACTED:API_TOKEN]\n")
    }))

  it.live("a secret named like one of Object's own keys still reaches the environment", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({}, { secrets: { ["__proto__"]: Redacted.make("proto-value"), constructor: Redacted.make("ctor-value") } })
      assert.strictEqual(
        yield* ToolCall.run(Bash, { command: '[ "$__proto__" = proto-value ] && [ "$constructor" = ctor-value ] && echo both' }, context),
        "both\n"
      )
    }))

  it.live("keeps the first 2,000 lines of a long output and says so", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext()
      const head = Array.from({ length: 2000 }, (_, i) => String(i + 1)).join("\n")
      assert.strictEqual(yield* ToolCall.run(Bash, { command: "seq 1 5000" }, context), `${head}\n\n(output truncated)`)
      assert.strictEqual(
        yield* ToolCall.run(Bash, { command: "seq 1 5000; exit 4" }, context),
        `${head}\n\n(output truncated)\n\n(exit code: 4)`
      )
    }))

  it.live("fails when the command cannot start where it was asked to", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({ "f.txt": "" })
      assert.strictEqual(yield* ToolCall.failure(Bash, { command: "pwd", cwd: "missing" }, context), "Command failed: File not found: missing")
      assert.strictEqual(
        yield* ToolCall.failure(Bash, { command: "pwd", cwd: "f.txt" }, context),
        "Command failed: Cannot run a command in f.txt: not a directory"
      )
    }))

  it.live("passes the sandbox's sentence on for a cwd outside the allowed directories", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext({}, { confined: true })
      assert.strictEqual(
        yield* ToolCall.failure(Bash, { command: "pwd", cwd: "/" }, context),
        "Path / is outside allowed directories"
      )
    }))

  it.live("fails with the timeout in seconds when the command runs too long", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext()
      assert.strictEqual(yield* ToolCall.failure(Bash, { command: "sleep 30", timeout: 1 }, context), "Command timed out after 1 seconds")
    }))

  it.live("on timeout, shows what the command printed until then, then the timeout", () =>
    Effect.gen(function*() {
      const { context } = yield* localContext()
      assert.strictEqual(
        yield* ToolCall.failure(Bash, { command: "echo started; echo warn >&2; sleep 30", timeout: 1 }, context),
        "started\nwarn\n\nCommand timed out after 1 seconds"
      )
      const long = yield* ToolCall.failure(Bash, { command: "seq 1 3000; sleep 30", timeout: 1 }, context)
      assert.strictEqual(
        long,
        Array.from({ length: 2000 }, (_, i) => String(i + 1)).join("\n") + "\n\n(output truncated)\n\nCommand timed out after 1 seconds"
      )
    }))
})
