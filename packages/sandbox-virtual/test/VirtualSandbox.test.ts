/**
 * VirtualSandbox with the real just-bash interpreter: files, exec, limits, glob, grep, isolation
 * and the layer. Mounts are in VirtualSandbox.mounts.test.ts, snapshots in Snapshot.test.ts; the
 * public conformance suite runs in Conformance.test.ts.
 */
import { Sandbox } from "@condukt/core"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as VirtualSandbox from "../src/VirtualSandbox.ts"
import { failure, ran } from "./support.ts"

/** The matching lines of a grep that searched every file. */
const matchesOf = (sandbox: Sandbox.Service, pattern: string, options?: Sandbox.GrepOptions) =>
  Effect.map(sandbox.grep(pattern, options), (result) => {
    assert.deepStrictEqual(result.skipped, [])
    return result.matches
  })


describe("VirtualSandbox files", () => {
  it.effect("starts at /home/user with the seed files; relative paths start at cwd", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ files: { "a.txt": "alpha\n", "/etc/app.conf": "x=1\n" } })
      assert.strictEqual(sandbox.cwd, "/home/user")
      assert.strictEqual(yield* sandbox.read("a.txt"), "alpha\n")
      assert.strictEqual(yield* sandbox.read("/home/user/a.txt"), "alpha\n")
      assert.strictEqual(yield* sandbox.read("/etc/app.conf"), "x=1\n")
      yield* sandbox.writeFile("deep/er/b.bin", new Uint8Array([0, 1, 255]))
      assert.deepStrictEqual([...(yield* sandbox.readFile("deep/er/b.bin"))], [0, 1, 255])
      assert.deepStrictEqual(yield* sandbox.exec("wc -c < deep/er/b.bin"), ran("3\n"))
    }))

  it.effect("creates a custom cwd", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ cwd: "/workspace/project", files: { "x.txt": "x" } })
      assert.strictEqual(sandbox.cwd, "/workspace/project")
      assert.deepStrictEqual(yield* sandbox.exec("pwd; ls; echo $HOME"), ran("/workspace/project\nx.txt\n/home/user\n"))
    }))

  it.effect("refuses to write over a directory or below a file, and to read below a file", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ files: { "src/x.ts": "x", "a.txt": "a" } })
      assert.deepStrictEqual(yield* failure(sandbox.writeFile("src", "oops")), {
        tag: "IsDirectory",
        message: "src is a directory, not a file"
      })
      assert.deepStrictEqual(yield* failure(sandbox.writeFile("a.txt/b/c", "oops")), {
        tag: "Failed",
        message: "Cannot write to a.txt/b/c: not a directory"
      })
      assert.deepStrictEqual(yield* failure(sandbox.read("a.txt/inner")), {
        tag: "Failed",
        message: "Cannot read a.txt/inner: not a directory"
      })
      assert.strictEqual(yield* sandbox.read("src/x.ts"), "x")
      assert.strictEqual(yield* sandbox.read("a.txt"), "a")
    }))

  it.effect("enforces the byte budget on writeFile and on the seed files", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits: { maxFileSystemBytes: 1000 } })
      yield* sandbox.writeFile("small.bin", new Uint8Array(600))
      assert.deepStrictEqual(yield* failure(sandbox.writeFile("big.bin", new Uint8Array(600))), {
        tag: "Failed",
        message: "Cannot write to big.bin: no space left in the sandbox (its filesystem holds at most 1000 bytes)"
      })
      yield* sandbox.exec("rm small.bin")
      yield* sandbox.writeFile("big.bin", new Uint8Array(600))
      assert.deepStrictEqual(
        yield* failure(VirtualSandbox.make({ files: { "x.txt": "y".repeat(2000) }, limits: { maxFileSystemBytes: 1000 } })),
        { tag: "Failed", message: "Cannot write to x.txt: no space left in the sandbox (its filesystem holds at most 1000 bytes)" }
      )
    }))

  it.effect("two sandboxes never see each other's files", () =>
    Effect.gen(function*() {
      const build = Layer.build(Layer.fresh(VirtualSandbox.layer()))
      const one = Context.get(yield* build, Sandbox.Sandbox)
      const two = Context.get(yield* build, Sandbox.Sandbox)
      yield* one.writeFile("mine.txt", "one")
      yield* one.exec("echo one > /tmp/shared.txt")
      assert.deepStrictEqual(yield* failure(two.read("mine.txt")), { tag: "NotFound", message: "File not found: mine.txt" })
      assert.deepStrictEqual(yield* two.exec("cat /tmp/shared.txt"), ran("cat: /tmp/shared.txt: No such file or directory\n", 1))
    }))
})

describe("VirtualSandbox exec", () => {
  it.effect("is stateless: shell functions and variables do not carry over", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make()
      assert.deepStrictEqual(yield* sandbox.exec("f() { echo in-f; }; X=1; cd /tmp; f"), ran("in-f\n"))
      assert.deepStrictEqual(yield* sandbox.exec("type f; echo \"[$X]\"; pwd"), ran("[]\n/home/user\nbash: type: f: not found\n"))
    }))

  it.effect("is stateless in variables' attributes too: readonly, export, integer, uppercase do not carry over, with or without a call's env", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make()
      const mark = "export FOO=bar; readonly R=1; declare -i I; declare -u U; echo set"
      const read = "FOO=baz; bash -c 'echo \"child [$FOO]\"'; R=2; I=1+1; U=abc; echo \"$R $I $U\""
      const calls: ReadonlyArray<Sandbox.ExecOptions> = [{}, { env: { TOKEN: "t" } }, { timeout: "20 seconds" }]
      for (const options of calls) {
        assert.deepStrictEqual(yield* sandbox.exec(mark, options), ran("set\n"))
        assert.deepStrictEqual(yield* sandbox.exec(read, options), ran("child []\n2 1+1 abc\n"))
      }
    }))

  it.effect("answers stdout, then stderr, and the exit code", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make()
      assert.deepStrictEqual(yield* sandbox.exec("echo err >&2; echo out; exit 4"), ran("out\nerr\n", 4))
    }))

  it.effect("keeps the script as written (leading whitespace in strings and heredocs)", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make()
      assert.deepStrictEqual(
        yield* sandbox.exec("cat <<EOF\n  indented\nEOF\necho \"a\n   b\""),
        ran("  indented\na\n   b\n")
      )
    }))

  it.effect("spawns no host program: only just-bash's own commands exist", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make()
      assert.deepStrictEqual(
        yield* sandbox.exec("node -v; curl http://example.com; git status; which ls; ls /bin | wc -l"),
        ran("/usr/bin/ls\n83\nbash: node: command not found\nbash: curl: command not found\nbash: git: command not found\n")
      )
    }))

  it.effect("names a missing or non-directory cwd", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ files: { "a.txt": "a" } })
      assert.deepStrictEqual(yield* failure(sandbox.exec("ls", { cwd: "nope" })), {
        tag: "NotFound",
        message: "File not found: nope"
      })
      assert.deepStrictEqual(yield* failure(sandbox.exec("ls", { cwd: "a.txt" })), {
        tag: "Failed",
        message: "Cannot run a command in a.txt: not a directory"
      })
    }))

  it.live("fails with Timeout when a command outlives its timeout, and stays usable", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make()
      assert.deepStrictEqual(yield* failure(sandbox.exec("sleep 5; echo late", { timeout: "100 millis" })), {
        tag: "Timeout",
        message: "Timed out after 100ms"
      })
      // just-bash 3.4.2 drops what a script printed when its deadline passes: nothing to pass on.
      const { reason } = yield* Effect.flip(sandbox.exec("echo early; sleep 5", { timeout: "100 millis" }))
      assert.deepStrictEqual(reason._tag === "Timeout" && [reason.timeoutMs, reason.output, reason.truncated], [100, undefined, undefined])
      assert.deepStrictEqual(yield* sandbox.exec("echo next", { timeout: "100 millis" }), ran("next\n"))
    }))
})

describe("VirtualSandbox limits", () => {
  it.effect("an endless loop ends after the hardened command count, and the next call runs", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make()
      assert.deepStrictEqual(
        yield* sandbox.exec("while true; do :; done"),
        { ...ran("", 126), limit: "The sandbox stopped the command: too many commands executed (>10000)." }
      )
      assert.deepStrictEqual(yield* sandbox.exec("echo next"), ran("next\n"))
    }))

  it.effect("keeps what the script wrote before the limit, and other stderr lines in the output", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits: { maxCommands: 5 } })
      assert.deepStrictEqual(
        yield* sandbox.exec("echo out; echo err >&2; while true; do :; done"),
        { ...ran("out\nerr\n", 126), limit: "The sandbox stopped the command: too many commands executed (>5)." }
      )
      assert.deepStrictEqual(yield* sandbox.exec("echo 'too many iterations' >&2; exit 126"), ran("too many iterations\n", 126))
    }))

  it.effect("maxLoopIterations stops a loop at its count", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits: { maxLoopIterations: 100 } })
      assert.deepStrictEqual(
        yield* sandbox.exec("i=0; while true; do i=$((i+1)); done"),
        { ...ran("", 126), limit: "The sandbox stopped the command: while loop: too many iterations (100)." }
      )
      assert.deepStrictEqual(yield* sandbox.exec("echo next"), ran("next\n"))
    }))

  it.effect("an output flood stops at maxOutputBytes with what fit, and the next call runs", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits: { maxOutputBytes: 1000 } })
      assert.deepStrictEqual(
        yield* sandbox.exec("while true; do echo 0123456789; done"),
        {
          output: "0123456789\n".repeat(90),
          exitCode: 126,
          truncated: true,
          limit: "The sandbox stopped the command: pipeline: total output size exceeded (>1000 bytes)."
        }
      )
      assert.deepStrictEqual(yield* sandbox.exec("echo next"), ran("next\n"))
    }))

  it.effect("filling the filesystem fails the write that does not fit, and the next call runs", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits: { maxFileSystemBytes: 1000 } })
      assert.deepStrictEqual(
        yield* sandbox.exec("printf '%2000s' x > big.txt"),
        ran("bash: write failed: no space left in the sandbox (its filesystem holds at most 1000 bytes)\n", 1)
      )
      assert.deepStrictEqual(
        yield* sandbox.exec("while true; do echo 0123456789 >> f || break; done; wc -c f"),
        ran("990 f\nENOSPC: in-memory filesystem byte limit exceeded (1000 bytes)\n")
      )
      assert.deepStrictEqual(yield* sandbox.exec("rm f; echo small > g && cat g"), ran("small\n"))
    }))

  it.live("wallTime stops a busy loop with just-bash's message; a longer timeout does not change it", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({
        limits: { wallTime: "200 millis", maxCommands: 1_000_000_000, maxLoopIterations: 1_000_000_000 }
      })
      const deadline = { ...ran("", 124), limit: "The sandbox stopped the command: execution exceeded execution deadline (200ms)." }
      assert.deepStrictEqual(yield* sandbox.exec("while true; do :; done"), deadline)
      assert.deepStrictEqual(yield* sandbox.exec("while true; do :; done", { timeout: "10 seconds" }), deadline)
      assert.deepStrictEqual(yield* sandbox.exec("echo next"), ran("next\n"))
    }))
})

describe("VirtualSandbox glob and grep", () => {
  const tree = {
    "src/a.ts": "const Alpha = 1\n",
    "src/b.tsx": "alpha()\n",
    "src/c.md": "alpha\n",
    "bin/data.bin": new Uint8Array([97, 108, 112, 104, 97, 0, 10]),
    "/opt/lib/x.ts": "alpha outside\n"
  }

  it.effect("glob: braces, an absolute pattern, ./ and a static base", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ files: tree })
      assert.deepStrictEqual(yield* sandbox.glob("src/*.{ts,tsx}"), ["src/a.ts", "src/b.tsx"])
      assert.deepStrictEqual(yield* sandbox.glob("./src/?.md"), ["src/c.md"])
      assert.deepStrictEqual(yield* sandbox.glob("/opt/**/*.ts"), ["/opt/lib/x.ts"])
      assert.deepStrictEqual(yield* sandbox.glob("../../opt/lib/*"), ["../../opt/lib/x.ts"])
      assert.deepStrictEqual(yield* sandbox.glob("nowhere/*.ts"), [])
      assert.deepStrictEqual(yield* failure(sandbox.glob("*", { cwd: "nope" })), {
        tag: "NotFound",
        message: "File not found: nope"
      })
    }))

  it.effect("glob treats quotes, backticks and ; as text", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ files: { "odd;name`x'.txt": "x", "keep.txt": "k" } })
      assert.deepStrictEqual(yield* sandbox.glob("odd;name`x'.txt"), ["odd;name`x'.txt"])
      assert.deepStrictEqual(yield* sandbox.glob("'; rm -rf / ; '"), [])
      assert.deepStrictEqual(yield* sandbox.glob("*.txt"), ["keep.txt", "odd;name`x'.txt"])
    }))

  it.effect("grep skips binary files and reports paths outside cwd as absolute", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ files: tree })
      assert.deepStrictEqual(yield* matchesOf(sandbox, "alpha"), [
        { path: "src/b.tsx", lineNumber: 1, line: "alpha()" },
        { path: "src/c.md", lineNumber: 1, line: "alpha" }
      ])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "alpha", { path: "/opt" }), [
        { path: "/opt/lib/x.ts", lineNumber: 1, line: "alpha outside" }
      ])
    }))

  it.effect("grep names an invalid regex by RE2's reason and the dialect", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make()
      assert.deepStrictEqual(yield* failure(sandbox.grep("(unclosed")), {
        tag: "InvalidPattern",
        message: "Invalid pattern (unclosed: missing closing ): `(unclosed`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences."
      })
    }))
})

describe("VirtualSandbox.layer", () => {
  it.effect("provides the sandbox both as Sandbox and as VirtualSandbox", () =>
    Effect.gen(function*() {
      const sandbox = yield* Sandbox.Sandbox
      yield* sandbox.writeFile("note.txt", "hi")
      assert.deepStrictEqual(yield* VirtualSandbox.snapshot, {
        version: 1,
        entries: [{ type: "file", path: "/home/user/note.txt", encoding: "utf8", content: "hi" }]
      })
    }).pipe(Effect.provide(VirtualSandbox.layer())))

  it.effect("fails to build with the reason when a mount's host directory is missing", () =>
    Effect.gen(function*() {
      const built = yield* failure(Layer.build(VirtualSandbox.layer({
        mounts: [{ hostPath: "/definitely/not/here", path: "/mnt/x", mode: "read-only" }]
      })))
      assert.deepStrictEqual(built, { tag: "NotFound", message: "File not found: /definitely/not/here" })
    }))
})
