import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Result, Scope, Stream } from "effect"
import * as Sandbox from "../src/Sandbox.ts"

/** Primitives over a Map: the least a backend must give. */
const inMemory = (files: Map<string, Uint8Array>) =>
  Sandbox.make({
    cwd: "/",
    readStream: (path) => {
      const bytes = files.get(path)
      return bytes === undefined
        ? Stream.fail(new Sandbox.SandboxError({ method: "readStream", reason: new Sandbox.NotFound({ path }) }))
        : Stream.succeed(bytes)
    },
    writeFile: (path, content) =>
      Effect.sync(() => void files.set(path, typeof content === "string" ? new TextEncoder().encode(content) : content)),
    exec: () => Effect.succeed({ output: "", exitCode: 0, truncated: false })
  })

describe("Sandbox", () => {
  it.effect("a backend that mounts and says its host directories can be watched: each mount that worked tells the watchers, until their scope closes", () =>
    Effect.gen(function*() {
      const mounted: Array<string> = []
      const sandbox = Sandbox.make({
        ...inMemory(new Map()),
        hostDirectories: () => [...mounted],
        mount: (hostPath) =>
          hostPath === "/missing"
            ? Effect.fail(new Sandbox.SandboxError({ method: "mount", reason: new Sandbox.NotFound({ path: hostPath }) }))
            : Effect.sync(() => void mounted.push(hostPath))
      })
      const heard: Array<ReadonlyArray<string>> = []
      const scope = yield* Scope.make()
      yield* Scope.provide(sandbox.watchHostDirectories!(Effect.sync(() => void heard.push(sandbox.hostDirectories!()))), scope)
      yield* sandbox.mount("/a", "/mnt/a", "read-only")
      yield* Effect.flip(sandbox.mount("/missing", "/mnt/m", "read-only"))
      yield* Scope.close(scope, Exit.void)
      yield* sandbox.mount("/b", "/mnt/b", "read-only")
      assert.deepStrictEqual(heard, [["/a"]])
      // A backend that cannot mount, or does not say its directories, has nothing to watch.
      assert.strictEqual(inMemory(new Map()).watchHostDirectories, undefined)
    }))

  it.effect("derives read and edit from the primitives; edit writes only on exactly one occurrence", () =>
    Effect.gen(function*() {
      const files = new Map([["a.txt", new TextEncoder().encode("x y x")]])
      const sandbox = inMemory(files)
      assert.deepStrictEqual(yield* sandbox.edit("a.txt", "x", "z"), { occurrences: 2, content: "x y x" })
      assert.deepStrictEqual(yield* sandbox.edit("a.txt", "q", "z"), { occurrences: 0, content: "x y x" })
      assert.deepStrictEqual(yield* sandbox.edit("a.txt", "y", "w"), { occurrences: 1, content: "x w x" })
      assert.strictEqual(yield* sandbox.read("a.txt"), "x w x")
      files.set("bin", new Uint8Array([0xff, 0xfe]))
      assert.strictEqual((yield* Effect.flip(sandbox.read("bin"))).message, "Cannot read bin: the file is not valid UTF-8 text (2 bytes)")
    }))

  it.effect("answers NotSupported for each optional capability a backend lacks", () =>
    Effect.gen(function*() {
      const sandbox = inMemory(new Map())
      const messages = yield* Effect.all([
        Effect.flip(sandbox.glob("*")),
        Effect.flip(sandbox.grep("x")),
        Effect.flip(sandbox.mount("/tmp", "/mnt", "read-only"))
      ])
      assert.deepStrictEqual(messages.map((e) => [e.reason._tag, e.message]), [
        ["NotSupported", "The active sandbox does not support glob"],
        ["NotSupported", "The active sandbox does not support grep"],
        ["NotSupported", "The active sandbox does not support mount"]
      ])
    }))

  it.effect("a no-op sandbox holds no file and dies, naming the call, on a write or exec a test did not give it", () =>
    Effect.gen(function*() {
      const sandbox = Sandbox.makeNoop({ cwd: "/work", exec: () => Effect.succeed({ output: "ok", exitCode: 0, truncated: false }) })
      assert.deepStrictEqual(yield* sandbox.exec("true"), { output: "ok", exitCode: 0, truncated: false })
      assert.strictEqual((yield* Effect.flip(sandbox.read("a.txt"))).message, "File not found: a.txt")
      const exit = yield* Effect.exit(sandbox.writeFile("a.txt", "x"))
      assert.isTrue(Exit.isFailure(exit) && Cause.pretty(exit.cause).includes("Sandbox.writeFile was called on a no-op sandbox"))
      assert.strictEqual((yield* Effect.flip(sandbox.glob("*"))).reason._tag, "NotSupported")
    }))

  it("clamps limits instead of refusing them", () => {
    assert.deepStrictEqual(
      [undefined, 0, -5, 2.7, 10 ** 9, Number.NaN].map((limit) => Sandbox.clampLimit(limit, Sandbox.DEFAULT_GREP_LIMIT)),
      [200, 1, 1, 2, Sandbox.MAX_LIMIT, 200]
    )
  })

  it("compiles grep patterns as RE2 and says what RE2 refused and what it accepts", () => {
    const insensitive = Sandbox.compilePattern("hello", false)
    assert.isTrue(Result.isSuccess(insensitive) && insensitive.success.test("HELLO"))
    assert.deepStrictEqual(Sandbox.compilePattern("a/(b", true), Result.fail("missing closing ): `a/(b`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences."))
    assert.deepStrictEqual(
      Sandbox.compilePattern("(?<!x)y", true),
      Result.fail("invalid named capture: `(?<!x)y`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences.")
    )
    // Counted repeats multiply the program: refused before it can take the memory.
    assert.deepStrictEqual(
      Sandbox.compilePattern("(?:\\pL{1000}){100}", true),
      Result.fail("invalid repeat count: `{100}`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences.")
    )
    assert.deepStrictEqual(
      Sandbox.compilePattern("\\pL{1000}".repeat(200), true),
      Result.fail("the pattern compiles to more than 100000 instructions (counted repeats multiply). Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences.")
    )
  })

  it("maps errno codes to reasons, with the backend's sentence for the rest", () => {
    assert.deepStrictEqual(
      ["ENOENT", "EISDIR", "EACCES", "EPERM", "EROFS", "ELOOP", "ENOTDIR", undefined].map((code) =>
        Sandbox.reasonOfErrno(code, "a/b", "Cannot read a/b: not a directory").message
      ),
      [
        "File not found: a/b",
        "a/b is a directory, not a file",
        "Permission denied: a/b",
        "Permission denied: a/b",
        "a/b is on a read-only filesystem",
        "Path a/b cannot be resolved: too many levels of symbolic links",
        "Cannot read a/b: not a directory",
        "Cannot read a/b: not a directory"
      ]
    )
  })
})
