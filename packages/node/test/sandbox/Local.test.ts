/** LocalSandbox on real temporary directories and real processes: files, exec, glob, grep, allowedPaths. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, FileSystem, Layer, Queue } from "effect"
import { execFileSync } from "node:child_process"
import {
  closeSync,
  constants,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeSync
} from "node:fs"
import * as net from "node:net"
import { join } from "node:path"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import * as Sandbox from "@condukt/core/Sandbox"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import { TempDir } from "@condukt/testing"

/** The matching lines of a grep that searched every file. */
const matchesOf = (sandbox: Sandbox.Service, pattern: string, options?: Sandbox.GrepOptions) =>
  Effect.map(sandbox.grep(pattern, options), (result) => {
    assert.deepStrictEqual(result.skipped, [])
    return result.matches
  })

/**
 * Two FIFOs in `dir` that let a test pace processes without timing: a process writes a line to
 * `started` (the test takes them in order from `started`), then blocks reading one byte from
 * `gate`; each `release` writes one byte, which exactly one blocked `dd bs=1 count=1` gets.
 */
const Gate = {
  make: (dir: string) =>
    Effect.gen(function*() {
      const lines = yield* Queue.unbounded<string>()
      const gateFd = yield* Effect.acquireRelease(
        Effect.sync(() => {
          execFileSync("mkfifo", [join(dir, "started"), join(dir, "gate")])
          // Opened read-write, neither open blocks, and the processes' opens never wait for us.
          const socket = new net.Socket({ fd: openSync(join(dir, "started"), constants.O_RDWR), readable: true, writable: false })
          let pending = ""
          socket.on("data", (chunk: Buffer) => {
            const parts = (pending + chunk.toString("utf8")).split("\n")
            pending = parts.pop() ?? ""
            for (const line of parts) Queue.offerUnsafe(lines, line)
          })
          return { socket, fd: openSync(join(dir, "gate"), constants.O_RDWR) }
        }),
        ({ fd, socket }) =>
          Effect.sync(() => {
            socket.destroy()
            closeSync(fd)
          })
      )
      return {
        started: Queue.take(lines),
        release: () => {
          writeSync(gateFd.fd, "x")
        }
      }
    })
}

/** A fresh real temporary directory holding `files` (removed with the test's scope). */
const tempDir = (files: Readonly<Record<string, string | Uint8Array>> = {}) => TempDir.withFiles(files, "condukt-local-")

/** What LocalSandbox needs from the host: Node's filesystem and paths, and a process budget. */
const host = Layer.merge(NodeServices.layer, ProcessBudget.layer())

const sandboxAt = (options: LocalSandbox.Options) => Effect.provide(LocalSandbox.make(options), host)

/** The message of the SandboxError an effect fails with, and its reason's tag. */
const failure = <A, R>(effect: Effect.Effect<A, Sandbox.SandboxError, R>) =>
  Effect.map(Effect.flip(effect), (error) => ({ tag: error.reason._tag, message: error.message }))

describe("LocalSandbox files", () => {
  it.effect("writes (creating parents) and reads back, relative to cwd", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.strictEqual(sandbox.cwd, dir)
      yield* sandbox.writeFile("a/b/c.txt", "héllo\n")
      assert.strictEqual(yield* sandbox.read("a/b/c.txt"), "héllo\n")
      assert.strictEqual(readFileSync(join(dir, "a/b/c.txt"), "utf8"), "héllo\n")
      yield* sandbox.writeFile(join(dir, "bytes.bin"), new Uint8Array([1, 2, 3]))
      assert.deepStrictEqual([...(yield* sandbox.readFile("bytes.bin"))], [1, 2, 3])
    }))

  it.effect("names a missing file and a directory as the caller wrote them", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir({ "sub/x.txt": "x" })
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* failure(sandbox.read("missing.txt")), {
        tag: "NotFound",
        message: "File not found: missing.txt"
      })
      assert.deepStrictEqual(yield* failure(sandbox.read("sub")), {
        tag: "IsDirectory",
        message: "sub is a directory, not a file"
      })
      assert.deepStrictEqual(yield* failure(sandbox.writeFile("sub", "x")), {
        tag: "IsDirectory",
        message: "sub is a directory, not a file"
      })
    }))

  it.effect("a file that is not UTF-8 fails read with the contract's sentence, readFile returns its bytes", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir({ "latin1.txt": new Uint8Array([0x63, 0x61, 0x66, 0xe9]) })
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* failure(sandbox.read("latin1.txt")), {
        tag: "Failed",
        message: "Cannot read latin1.txt: the file is not valid UTF-8 text (4 bytes)"
      })
      assert.strictEqual((yield* sandbox.readFile("latin1.txt")).length, 4)
    }))

  it.effect("a path through a regular file fails with a readable reason", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir({ "file.txt": "x" })
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* failure(sandbox.read("file.txt/inner")), {
        tag: "Failed",
        message: "Cannot read file.txt/inner: not a directory"
      })
    }))

  it.effect("mount is not supported", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* failure(sandbox.mount("/host", "/mnt", "read-only")), {
        tag: "NotSupported",
        message: "The active sandbox does not support mount"
      })
    }))
})

describe("LocalSandbox allowedPaths", () => {
  /** base/proj (allowed), base/proj-secrets, base/shared, base/outside.txt. */
  const layout = Effect.gen(function*() {
    const base = yield* tempDir({
      "proj/src/main.ts": "main\n",
      "proj-secrets/key.txt": "secret\n",
      "shared/notes.txt": "shared notes\n",
      "outside.txt": "outside\n"
    })
    const proj = join(base, "proj")
    symlinkSync("/etc", join(proj, "etc-link"))
    symlinkSync(join(base, "shared"), join(proj, "shared-link"))
    symlinkSync("loop-b", join(proj, "loop-a"))
    symlinkSync("loop-a", join(proj, "loop-b"))
    return { base, proj }
  })

  it.effect("refuses .. escaping, absolute paths outside and sibling-prefix directories", () =>
    Effect.gen(function*() {
      const { base, proj } = yield* layout
      const sandbox = yield* sandboxAt({ cwd: proj, allowedPaths: [proj] })
      assert.deepStrictEqual(yield* failure(sandbox.read("../outside.txt")), {
        tag: "OutsideAllowedPaths",
        message: `Path ${base}/outside.txt is outside allowed directories`
      })
      assert.deepStrictEqual(yield* failure(sandbox.read("/etc/hostname")), {
        tag: "OutsideAllowedPaths",
        message: "Path /etc/hostname is outside allowed directories"
      })
      assert.deepStrictEqual(yield* failure(sandbox.read(`${base}/proj-secrets/key.txt`)), {
        tag: "OutsideAllowedPaths",
        message: `Path ${base}/proj-secrets/key.txt is outside allowed directories`
      })
      assert.deepStrictEqual(yield* failure(sandbox.writeFile("../proj-secrets/new.txt", "x")), {
        tag: "OutsideAllowedPaths",
        message: `Path ${base}/proj-secrets/new.txt is outside allowed directories`
      })
      const error = yield* Effect.flip(sandbox.read("../outside.txt"))
      assert.deepStrictEqual(error.reason._tag === "OutsideAllowedPaths" ? error.reason.allowed : [], [proj])
    }))

  it.effect("refuses a symlink inside that leads to /etc", () =>
    Effect.gen(function*() {
      const { proj } = yield* layout
      const sandbox = yield* sandboxAt({ cwd: proj, allowedPaths: [proj] })
      assert.deepStrictEqual(yield* failure(sandbox.read("etc-link/passwd")), {
        tag: "OutsideAllowedPaths",
        message: `Path ${proj}/etc-link/passwd is outside allowed directories`
      })
    }))

  it.effect("ends a symlink loop with TooManySymlinks", () =>
    Effect.gen(function*() {
      const { proj } = yield* layout
      const sandbox = yield* sandboxAt({ cwd: proj, allowedPaths: [proj] })
      assert.deepStrictEqual(yield* failure(sandbox.read("loop-a")), {
        tag: "TooManySymlinks",
        message: `Path ${proj}/loop-a cannot be resolved: too many levels of symbolic links`
      })
    }))

  it.effect("admits a file that does not exist yet, and write creates it with its parents", () =>
    Effect.gen(function*() {
      const { proj } = yield* layout
      const sandbox = yield* sandboxAt({ cwd: proj, allowedPaths: [proj] })
      yield* sandbox.writeFile("new/deep/file.txt", "fresh\n")
      assert.strictEqual(readFileSync(join(proj, "new/deep/file.txt"), "utf8"), "fresh\n")
      assert.strictEqual(yield* sandbox.read("src/../new/deep/file.txt"), "fresh\n")
    }))

  it.effect("admits a symlink that leads to another allowed directory (relative roots join cwd)", () =>
    Effect.gen(function*() {
      const { proj } = yield* layout
      const sandbox = yield* sandboxAt({ cwd: proj, allowedPaths: [".", "../shared"] })
      assert.strictEqual(yield* sandbox.read("shared-link/notes.txt"), "shared notes\n")
      yield* sandbox.writeFile("shared-link/more.txt", "more\n")
      assert.strictEqual(yield* sandbox.read("../shared/more.txt"), "more\n")
    }))

  it.live("checks the exec cwd, the glob cwd and static base, and the grep path", () =>
    Effect.gen(function*() {
      const { base, proj } = yield* layout
      const sandbox = yield* sandboxAt({ cwd: proj, allowedPaths: [proj] })
      const outside = (path: string) => ({
        tag: "OutsideAllowedPaths",
        message: `Path ${path} is outside allowed directories`
      })
      assert.deepStrictEqual(yield* failure(sandbox.exec("pwd", { cwd: ".." })), outside(base))
      assert.deepStrictEqual(yield* failure(sandbox.glob("*", { cwd: "etc-link" })), outside(`${proj}/etc-link`))
      assert.deepStrictEqual(yield* failure(sandbox.glob("etc-link/pass*")), outside(`${proj}/etc-link`))
      assert.deepStrictEqual(yield* failure(sandbox.glob("../proj-secrets/*")), outside(`${base}/proj-secrets`))
      assert.deepStrictEqual(yield* failure(sandbox.glob("/etc/*")), outside("/etc"))
      assert.deepStrictEqual(yield* failure(sandbox.grep("root", { path: "etc-link/passwd" })), outside(`${proj}/etc-link/passwd`))
      assert.deepStrictEqual(yield* failure(sandbox.grep("secret", { path: "../proj-secrets" })), outside(`${base}/proj-secrets`))
    }))

  it.effect("walks never follow symlinks: glob and grep stay inside", () =>
    Effect.gen(function*() {
      const { proj } = yield* layout
      const sandbox = yield* sandboxAt({ cwd: proj, allowedPaths: [proj] })
      assert.deepStrictEqual(yield* sandbox.glob("**/*"), ["src/main.ts"])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "root|shared|main"), [{ path: "src/main.ts", lineNumber: 1, line: "main" }])
    }))
})

describe("LocalSandbox exec", () => {
  it.live("returns the combined output and the exit code, running in a cwd relative to the sandbox's", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir({ "sub/x.txt": "x" })
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* sandbox.exec("echo out; echo err >&2; exit 3"), {
        output: "out\nerr\n",
        exitCode: 3,
        truncated: false
      })
      assert.strictEqual((yield* sandbox.exec("pwd; ls", { cwd: "sub" })).output, `${dir}/sub\nx.txt\n`)
      assert.deepStrictEqual(yield* failure(sandbox.exec("pwd", { cwd: "nowhere" })), {
        tag: "NotFound",
        message: "File not found: nowhere"
      })
      assert.deepStrictEqual(yield* failure(sandbox.exec("pwd", { cwd: "sub/x.txt" })), {
        tag: "Failed",
        message: "Cannot run a command in sub/x.txt: not a directory"
      })
    }))

  it.live("passes env for one call only, and keeps no shell state between calls", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.strictEqual((yield* sandbox.exec("echo $GREETING", { env: { GREETING: "hi" } })).output, "hi\n")
      yield* sandbox.exec("cd /tmp; export X=1; GREETING=set")
      assert.strictEqual((yield* sandbox.exec("pwd; echo \"X=$X G=$GREETING\"")).output, `${dir}\nX= G=\n`)
    }))

  it.live("fails with Timeout when the command outlives its timeout", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* failure(sandbox.exec("sleep 30", { timeout: "200 millis" })), {
        tag: "Timeout",
        message: "Timed out after 200ms"
      })
    }))

  it.live("on timeout, carries what the command printed until then", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const sandbox = yield* sandboxAt({ cwd: dir })
      const error = yield* Effect.flip(sandbox.exec("echo started; echo warn >&2; sleep 30", { timeout: "500 millis" }))
      assert.deepStrictEqual(
        error.reason._tag === "Timeout" && [error.reason.timeoutMs, error.reason.output, error.reason.truncated],
        [500, "started\nwarn\n", false]
      )
    }))

  it.live("on timeout, keeps what a command prints as it dies", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const sandbox = yield* sandboxAt({ cwd: dir })
      // The group gets SIGTERM; the trap's last words come after the deadline and still count.
      const error = yield* Effect.flip(sandbox.exec("trap 'echo bye; exit 1' TERM; echo started; sleep 30 & wait", { timeout: "500 millis" }))
      assert.strictEqual(error.reason._tag === "Timeout" && error.reason.output, "started\nbye\n")
    }))

  it.live("runs at most the budget's processes at once; the others wait their turn", () =>
    Effect.gen(function*() {
      const max = 3
      const count = 12
      const dir = yield* tempDir()
      mkdirSync(join(dir, "live"))
      const gate = yield* Gate.make(dir)
      const sandbox = yield* LocalSandbox.make({ cwd: dir }).pipe(
        Effect.provide(Layer.merge(NodeServices.layer, ProcessBudget.layer({ max })))
      )
      // Each process marks itself live, counts the live marks, says it started, and waits for
      // the gate; it removes its mark before it exits, and its permit is returned after it exits.
      const script = (i: number) =>
        `mkdir live/${i}; n=$(ls live | wc -l); echo ${i} > started; dd bs=1 count=1 < gate >/dev/null 2>&1; rmdir live/${i}; echo $n`
      const runs = yield* Effect.forkChild(
        Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => sandbox.exec(script(i)), { concurrency: "unbounded" }),
        { startImmediately: true }
      )
      // Hold every started process until `max` are held (or all have started), then let one go:
      // a budget that let more run would show it in some process's count.
      let started = 0
      let released = 0
      while (released < count) {
        if (started - released < max && started < count) {
          yield* gate.started
          started++
        } else {
          gate.release()
          released++
        }
      }
      const counts = (yield* Fiber.join(runs)).map((result) => Number(result.output))
      assert.strictEqual(Math.max(...counts), max)
      assert.deepStrictEqual(counts.filter((n) => n > max), [])
    }))

  it.live("a command that waited for a process permit still gets its whole timeout", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const gate = yield* Gate.make(dir)
      const sandbox = yield* LocalSandbox.make({ cwd: dir }).pipe(
        Effect.provide(Layer.merge(NodeServices.layer, ProcessBudget.layer({ max: 1 })))
      )
      // The holder keeps the only permit for half a second, longer than the next command's timeout.
      const holder = yield* Effect.forkChild(sandbox.exec("echo > started; sleep 0.5"), { startImmediately: true })
      yield* gate.started
      const queued = yield* sandbox.exec("echo ran", { timeout: "200 millis" })
      assert.deepStrictEqual(queued, { output: "ran\n", exitCode: 0, truncated: false })
      assert.strictEqual((yield* Fiber.join(holder)).exitCode, 0)
    }))

  it.live("fails without running when no process permit comes free within the budget's maxWait", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const gate = yield* Gate.make(dir)
      const sandbox = yield* LocalSandbox.make({ cwd: dir }).pipe(
        Effect.provide(Layer.merge(NodeServices.layer, ProcessBudget.layer({ max: 1, maxWait: "200 millis" })))
      )
      const holder = yield* Effect.forkChild(sandbox.exec("echo > started; dd bs=1 count=1 < gate >/dev/null 2>&1"), {
        startImmediately: true
      })
      yield* gate.started
      assert.deepStrictEqual(yield* failure(sandbox.exec("echo never > ran")), {
        tag: "Failed",
        message: "Cannot run the command: the host's limit of 1 running commands stayed reached for 0.2 seconds; try again later"
      })
      gate.release()
      assert.strictEqual((yield* Fiber.join(holder)).exitCode, 0)
      assert.deepStrictEqual(readdirSync(dir).sort(), ["gate", "started"])
    }))

  it.live("isolates no host state: a command can read the Node process's own environment", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const sandbox = yield* sandboxAt({ cwd: dir, allowedPaths: [dir] })
      // The command's own environment is the allow-list, but its parent's is one file away
      // (docs/sandbox.md says so; this keeps the doc honest).
      const result = yield* sandbox.exec("tr '\\0' '\\n' < /proc/$PPID/environ")
      assert.strictEqual(result.output, readFileSync(`/proc/${process.pid}/environ`, "utf8").replaceAll("\0", "\n"))
      assert.isAbove(result.output.length, 0)
    }))

  it.live("caps the output at maxOutputBytes", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const sandbox = yield* sandboxAt({ cwd: dir, maxOutputBytes: 10 })
      const result = yield* sandbox.exec("printf '%0100d' 0")
      assert.isTrue(result.truncated)
      assert.isTrue(result.output.length <= 10)
    }))
})

describe("LocalSandbox glob", () => {
  const files = {
    "b.ts": "",
    "a.ts": "",
    ".env": "",
    ".config/x.ts": "",
    "src/z.ts": "",
    "src/deep/y.ts": "",
    "src/readme.md": ""
  }

  it.effect("lists files only, sorted, dotfiles included, relative to the base", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir(files)
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* sandbox.glob("**/*"), [
        ".config/x.ts",
        ".env",
        "a.ts",
        "b.ts",
        "src/deep/y.ts",
        "src/readme.md",
        "src/z.ts"
      ])
      assert.deepStrictEqual(yield* sandbox.glob("*.ts"), ["a.ts", "b.ts"])
      assert.deepStrictEqual(yield* sandbox.glob("**/*.ts", { cwd: "src" }), ["deep/y.ts", "z.ts"])
      assert.deepStrictEqual(yield* sandbox.glob("*.rs"), [])
    }))

  it.effect("keeps the first `limit` paths in order; limits are clamped to at least 1", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir(files)
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* sandbox.glob("**/*.ts", { limit: 2 }), [".config/x.ts", "a.ts"])
      assert.deepStrictEqual(yield* sandbox.glob("**/*.ts", { limit: 0 }), [".config/x.ts"])
      assert.deepStrictEqual(yield* sandbox.glob("**/*.ts", { limit: -5 }), [".config/x.ts"])
    }))

  it.effect("fails on a base that does not exist or is a file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir(files)
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* failure(sandbox.glob("*", { cwd: "nope" })), {
        tag: "NotFound",
        message: "File not found: nope"
      })
      assert.deepStrictEqual(yield* failure(sandbox.glob("*", { cwd: "a.ts" })), {
        tag: "Failed",
        message: "Cannot list files in a.ts: not a directory"
      })
    }))
})

describe("LocalSandbox grep", () => {
  const files = {
    "a.txt": "hello\nHello world\nbye\r\nhello again\n",
    "sub/b.md": "say hello\n",
    "sub/c.ts": "const hello = 1\n",
    ".hidden.txt": "hello\n",
    "bin.dat": new Uint8Array([104, 101, 108, 108, 111, 0, 1, 2]),
    "z.txt": "zzz hello\n"
  }

  it.effect("reports path, 1-based line number and line, in path then line order", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir(files)
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello"), [
        { path: "a.txt", lineNumber: 1, line: "hello" },
        { path: "a.txt", lineNumber: 4, line: "hello again" },
        { path: "sub/b.md", lineNumber: 1, line: "say hello" },
        { path: "sub/c.ts", lineNumber: 1, line: "const hello = 1" },
        { path: "z.txt", lineNumber: 1, line: "zzz hello" }
      ])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "^bye$"), [{ path: "a.txt", lineNumber: 3, line: "bye" }])
    }))

  it.effect("filters files by glob, matches case-insensitively on request, stops at limit", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir(files)
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { glob: "**/*.{md,ts}" }), [
        { path: "sub/b.md", lineNumber: 1, line: "say hello" },
        { path: "sub/c.ts", lineNumber: 1, line: "const hello = 1" }
      ])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { glob: "*.md" }), [])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "HELLO w", { caseSensitive: false }), [
        { path: "a.txt", lineNumber: 2, line: "Hello world" }
      ])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { limit: 2 }), [
        { path: "a.txt", lineNumber: 1, line: "hello" },
        { path: "a.txt", lineNumber: 4, line: "hello again" }
      ])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { limit: 0 }), [{ path: "a.txt", lineNumber: 1, line: "hello" }])
    }))

  it.effect("searches a directory or a single file, paths relative to the sandbox cwd", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir(files)
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { path: "sub" }), [
        { path: "sub/b.md", lineNumber: 1, line: "say hello" },
        { path: "sub/c.ts", lineNumber: 1, line: "const hello = 1" }
      ])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { path: "sub/c.ts", glob: "*.md" }), [
        { path: "sub/c.ts", lineNumber: 1, line: "const hello = 1" }
      ])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { path: ".hidden.txt" }), [
        { path: ".hidden.txt", lineNumber: 1, line: "hello" }
      ])
      assert.deepStrictEqual(yield* failure(sandbox.grep("hello", { path: "nope" })), {
        tag: "NotFound",
        message: "File not found: nope"
      })
    }))

  it.effect("skips binary files, and dotfiles unless the glob or the path names them", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir(files)
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { glob: "*.{dat,txt}" }), [
        { path: "a.txt", lineNumber: 1, line: "hello" },
        { path: "a.txt", lineNumber: 4, line: "hello again" },
        { path: "z.txt", lineNumber: 1, line: "zzz hello" }
      ])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { path: "bin.dat" }), [])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { glob: ".*" }), [{ path: ".hidden.txt", lineNumber: 1, line: "hello" }])
    }))

  it.effect("an invalid regex fails with InvalidPattern carrying RE2's reason", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir(files)
      const sandbox = yield* sandboxAt({ cwd: dir })
      const error = yield* Effect.flip(sandbox.grep("(unclosed"))
      assert.strictEqual(error.reason._tag, "InvalidPattern")
      assert.strictEqual(error.message, "Invalid pattern (unclosed: missing closing ): `(unclosed`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences.")
      const insensitive = yield* Effect.flip(sandbox.grep("a{2,1}", { caseSensitive: false }))
      assert.strictEqual(insensitive.message, "Invalid pattern a{2,1}: invalid repeat count: `{2,1}`. Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences.")
    }))

  it.effect("reports paths outside the sandbox cwd as absolute", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir(files)
      const other = yield* tempDir({ "o.txt": "hello there\n" })
      const sandbox = yield* sandboxAt({ cwd: dir })
      assert.deepStrictEqual(yield* matchesOf(sandbox, "hello", { path: other }), [
        { path: `${other}/o.txt`, lineNumber: 1, line: "hello there" }
      ])
    }))
})

describe("LocalSandbox.layer", () => {
  it.effect("provides the Sandbox service at the given cwd", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir({ "x.txt": "x" })
      const text = yield* Effect.provide(
        Effect.gen(function*() {
          const sandbox = yield* Sandbox.Sandbox
          assert.strictEqual(sandbox.cwd, dir)
          return yield* sandbox.read("x.txt")
        }),
        LocalSandbox.layer({ cwd: dir }).pipe(Layer.provide(host))
      )
      assert.strictEqual(text, "x")
    }))

  it.effect("a cwd that does not exist or is a file fails the build naming it; nothing is created and a later build retries", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir({ "file.txt": "f" })
      const missing = join(dir, "missing")
      const layer = LocalSandbox.layer({ cwd: missing }).pipe(Layer.provide(host))
      assert.deepStrictEqual(yield* failure(Layer.build(layer)), {
        tag: "NotFound",
        message: `File not found: ${missing}`
      })
      assert.deepStrictEqual(readdirSync(dir), ["file.txt"])
      assert.deepStrictEqual(yield* failure(sandboxAt({ cwd: join(dir, "file.txt") })), {
        tag: "Failed",
        message: `Cannot use ${join(dir, "file.txt")} as the working directory: not a directory`
      })
      mkdirSync(missing)
      assert.strictEqual(Context.get(yield* Layer.build(layer), Sandbox.Sandbox).cwd, missing)
    }))

  it.live("exec in a cwd removed after the build names the directory, not \".\"", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const cwd = join(dir, "work")
      mkdirSync(cwd)
      const sandbox = yield* sandboxAt({ cwd })
      rmSync(cwd, { recursive: true })
      assert.deepStrictEqual(yield* failure(sandbox.exec("true")), { tag: "NotFound", message: `File not found: ${cwd}` })
    }))

  it.effect("defaults cwd to the process's working directory, as a real path", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const sandbox = yield* LocalSandbox.make()
      assert.strictEqual(sandbox.cwd, yield* fs.realPath(process.cwd()))
    }).pipe(Effect.provide(host)))
})
