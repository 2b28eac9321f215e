/**
 * The built-in coding tools (Read, Bash, Edit, Write, Glob, Grep), unchanged, on a virtual
 * sandbox: first called as the Executor calls them, then in a whole session driven by TestModel
 * with the sandbox given as one option. Every text the model reads is asserted whole.
 */
import { Tools } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel, ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as VirtualSandbox from "../src/VirtualSandbox.ts"
import { hostDir, virtualContext } from "./support.ts"

describe("coding tools on VirtualSandbox", () => {
  it.effect("Write, Read and Edit", () =>
    Effect.gen(function*() {
      const { context } = yield* virtualContext()
      assert.strictEqual(
        yield* ToolCall.run(Tools.Write, { path: "notes/todo.md", content: "- one\n- two\n" }, context),
        "Wrote notes/todo.md (2 lines, 12 bytes)"
      )
      assert.strictEqual(yield* ToolCall.run(Tools.Read, { path: "notes/todo.md" }, context), "- one\n- two\n")
      assert.strictEqual(yield* ToolCall.run(Tools.Read, { path: "notes/todo.md", offset: 2 }, context), "(lines 2-2 of 2)\n\n- two")
      assert.strictEqual(
        yield* ToolCall.run(Tools.Edit, { path: "notes/todo.md", old_text: "- two", new_text: "- 2" }, context),
        "Successfully edited notes/todo.md\n\n```diff\n- - two\n+ - 2\n```"
      )
      assert.strictEqual(yield* ToolCall.run(Tools.Read, { path: "notes/todo.md" }, context), "- one\n- 2\n")
      assert.strictEqual(yield* ToolCall.failure(Tools.Read, { path: "missing.md" }, context), "File not found: missing.md")
      assert.strictEqual(yield* ToolCall.failure(Tools.Read, { path: "notes" }, context), "notes is a directory, not a file")
      assert.strictEqual(
        yield* ToolCall.failure(Tools.Edit, { path: "notes/todo.md", old_text: "- ", new_text: "* " }, context),
        "Found 2 occurrences of old_text in notes/todo.md. Make the match unique by including more surrounding context."
      )
    }))

  it.effect("Bash: output, exit code, per-call cwd, and statelessness", () =>
    Effect.gen(function*() {
      const { context } = yield* virtualContext({ files: { "src/a.ts": "export const a = 1\n" } })
      assert.strictEqual(yield* ToolCall.run(Tools.Bash, { command: "cat a.ts", cwd: "src" }, context), "export const a = 1\n")
      assert.strictEqual(
        yield* ToolCall.run(Tools.Bash, { command: "cd src; export X=1; ls nope" }, context),
        "ls: nope: No such file or directory\n\n(exit code: 2)"
      )
      assert.strictEqual(yield* ToolCall.run(Tools.Bash, { command: "pwd; echo \"[$X]\"" }, context), "/home/user\n[]\n")
      assert.strictEqual(
        yield* ToolCall.run(Tools.Bash, { command: "while true; do :; done" }, context),
        "The sandbox stopped the command: too many commands executed (>10000).\n\n(exit code: 126)"
      )
    }))

  it.effect("Bash: a limit's sentence survives the cut of a long output", () =>
    Effect.gen(function*() {
      const { context } = yield* virtualContext()
      assert.strictEqual(
        yield* ToolCall.run(Tools.Bash, { command: "while true; do echo line; done" }, context),
        Array.from({ length: 2000 }, () => "line").join("\n") +
          "\n\n(output truncated)\n\nThe sandbox stopped the command: too many commands executed (>10000).\n\n(exit code: 126)"
      )
    }))

  it.effect("Bash: an output stopped at the sandbox's byte cap says it was truncated", () =>
    Effect.gen(function*() {
      const { context } = yield* virtualContext({ limits: { maxOutputBytes: 1000 } })
      assert.strictEqual(
        yield* ToolCall.run(Tools.Bash, { command: "while true; do echo 0123456789; done" }, context),
        Array.from({ length: 90 }, () => "0123456789").join("\n") +
          "\n\n(output truncated)\n\nThe sandbox stopped the command: pipeline: total output size exceeded (>1000 bytes).\n\n(exit code: 126)"
      )
    }))

  it.effect("Bash on a read-only mount reads, and reports a refused write as a result", () =>
    Effect.gen(function*() {
      const host = yield* hostDir({ "data.csv": "a,b\n" })
      const { context } = yield* virtualContext({ mounts: [{ hostPath: host, path: "/data", mode: "read-only" }] })
      assert.strictEqual(yield* ToolCall.run(Tools.Bash, { command: "cat /data/data.csv" }, context), "a,b\n")
      assert.strictEqual(
        yield* ToolCall.run(Tools.Bash, { command: "echo c,d >> /data/data.csv" }, context),
        "bash: append failed: read-only file system\n\n(exit code: 1)"
      )
      assert.strictEqual(
        yield* ToolCall.failure(Tools.Write, { path: "/data/new.csv", content: "x" }, context),
        "Cannot write to /data/new.csv: /data/new.csv is on a read-only filesystem"
      )
    }))

  it.live("Bash: a command past its timeout", () =>
    Effect.gen(function*() {
      const { context } = yield* virtualContext()
      assert.strictEqual(
        yield* ToolCall.failure(Tools.Bash, { command: "sleep 5", timeout: 1 }, context),
        "Command timed out after 1 seconds"
      )
    }))

  it.effect("Glob and Grep", () =>
    Effect.gen(function*() {
      const { context } = yield* virtualContext({
        files: { "src/a.ts": "// TODO: a\n", "src/b.ts": "ok\n// todo: b\n", ".env": "TODO=1\n", "README.md": "todo\n" }
      })
      assert.strictEqual(
        yield* ToolCall.run(Tools.Glob, { pattern: "**/*" }, context),
        "4 match(es) for **/*:\n.env\nREADME.md\nsrc/a.ts\nsrc/b.ts"
      )
      assert.strictEqual(
        yield* ToolCall.run(Tools.Glob, { pattern: "**/*.ts", limit: 1 }, context),
        "1 match(es) for **/*.ts:\nsrc/a.ts\n\n(only the first 1 paths are shown; narrow the pattern or raise limit)"
      )
      assert.strictEqual(yield* ToolCall.run(Tools.Glob, { pattern: "$(rm -rf /)" }, context), "No files matched $(rm -rf /)")
      assert.strictEqual(
        yield* ToolCall.run(Tools.Grep, { pattern: "todo", case_sensitive: false, glob: "**/*.ts" }, context),
        "src/a.ts:1: // TODO: a\nsrc/b.ts:2: // todo: b"
      )
      assert.strictEqual(
        yield* ToolCall.run(Tools.Grep, { pattern: "todo", case_sensitive: false, limit: 1 }, context),
        "README.md:1: todo\n\n(only the first 1 matches are shown; narrow the pattern or raise limit)"
      )
      assert.strictEqual(yield* ToolCall.failure(Tools.Grep, { pattern: "([" }, context), "Invalid regex: missing closing ]: `[`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences.")
    }))
})

describe("a session on VirtualSandbox", () => {
  it.effect("runs the coding tools a TestModel calls, against the virtual files only", () =>
    Effect.gen(function*() {
      const answer = yield* Condukt.run("write and check a file", {
        model: "test:x",
        tools: Tools.coding,
        sandbox: VirtualSandbox.layer({ files: { "seed.txt": "seeded\n" } })
      })
      assert.strictEqual(answer.text, "done")
      const requests = yield* (yield* TestModel.TestModel).requests
      const results = requests.flatMap((request) => {
        const last = request.messages.at(-1)
        return last?._tag === "ToolResultMessage" ? [last.content] : []
      })
      assert.deepStrictEqual(results, [
        "Wrote out/hello.txt (1 lines, 6 bytes)",
        "hello\nseeded\n/home/user\n",
        "1 match(es) for **/hello.txt:\nout/hello.txt"
      ])
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.toolCall("Write", { path: "out/hello.txt", content: "hello\n" }),
      TestModel.toolCall("Bash", { command: "cat out/hello.txt seed.txt; pwd" }),
      TestModel.toolCall("Glob", { pattern: "**/hello.txt" }),
      TestModel.text("done")
    ]))))
})
