/**
 * SandboxConformance — the one set of tests every `Sandbox` backend must pass, public so users
 * can run it against their own sandboxes.
 *
 * `run(name, layer, capabilities)` registers a `describe` block of `@effect/vitest` tests; call it
 * at the top level of a test file. Each test builds the layer afresh (`Layer.fresh`, in the
 * test's scope), so no test sees another's files: a layer that owns its state (an in-memory
 * tree, a temporary directory acquired in the layer) is enough, and a function returning a layer
 * is called once per test. Everything goes through the contract: files are seeded with
 * `writeFile`, checked with `read`, `glob` and `exec`; nothing assumes a host filesystem except
 * the mount tests, which mount a real host directory, and the hostile-file tests (a named pipe, a
 * device), which reach the host as `hostFiles` says or through a mount.
 *
 * Capabilities say which optional operations the backend implements: each one flagged `true` is
 * tested, each one flagged `false` must fail with `NotSupported`. Tests run on the live clock
 * (`it.live`) because backends time commands out with real time.
 */
import { Sandbox } from "@condukt/core"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, type Scope, Stream } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/**
 * Which optional operations the backend implements.
 *
 * @since 0.1.0
 * @category models
 */
export interface Capabilities {
  readonly glob: boolean
  readonly grep: boolean
  readonly mount: boolean
  /**
   * Whether the backend's files are the host's: `"cwd"` when its cwd is a host directory (a named
   * pipe made there is tested), `"everywhere"` when absolute paths reach the host too (`/dev/zero`
   * is tested). Left out, the hostile files are tested through a mount when `mount` is true.
   */
  readonly hostFiles?: "cwd" | "everywhere" | undefined
}

/** What an operation ended with, as a plain value so a whole outcome is asserted at once. */
type Outcome<A> = { readonly success: A } | { readonly reason: string; readonly message: string }

const outcome = <A, R>(effect: Effect.Effect<A, Sandbox.SandboxError, R>): Effect.Effect<Outcome<A>, never, R> =>
  Effect.match(effect, {
    onFailure: (error): Outcome<A> => ({ reason: error.reason._tag, message: error.message }),
    onSuccess: (success): Outcome<A> => ({ success })
  })

/** `relative` under the sandbox's absolute `cwd`, as the backend itself would spell it. */
const under = (cwd: string, relative: string) => (cwd.endsWith("/") ? cwd + relative : `${cwd}/${relative}`)

/** A finished command's whole result. */
const ran = (output: string, exitCode = 0): Sandbox.ExecResult => ({ output, exitCode, truncated: false })

const seed = (sandbox: Sandbox.Service, files: Readonly<Record<string, string>>) =>
  Effect.forEach(Object.entries(files), ([file, content]) => sandbox.writeFile(file, content), { discard: true })

/** A real host directory holding `files`, removed with the test's scope (for mounts). */
const hostDirectory = (files: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-conformance-")))
      for (const [file, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), content)
      return dir
    }),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

const nonUtf8 = [0x63, 0x61, 0x66, 0xe9, 0x00, 0xff, 0xfe]

const globTree = {
  "src/b.ts": "b",
  "src/a.ts": "a",
  "src/nested/c.ts": "c",
  "src/.dot.ts": "dot",
  ".hidden/d.ts": "d",
  "README.md": "readme"
}

const grepTree = {
  "src/a.ts": "const Alpha = 1\nconst beta = 2\nalpha()\n",
  "src/b.md": "alpha in markdown\n",
  "notes.txt": "nothing to see\n",
  ".hidden/secret.ts": "alpha, hidden\n"
}

/** The matching lines of a grep that searched every file. */
const matchesOf = (sandbox: Sandbox.Service, pattern: string, options?: Sandbox.GrepOptions) =>
  Effect.map(sandbox.grep(pattern, options), (result) => {
    assert.deepStrictEqual(result.skipped, [], `grep ${pattern} skipped files`)
    return result.matches
  })

/** The sentence that ends every refusal of a grep pattern. */
const dialectHint = "Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences"

/** Shell syntax a glob must treat as text: none of it may run. */
const unsafePatterns = ["$(rm -rf /)", "$(touch pwned)", "`touch pwned`", "*; touch pwned", "* && touch pwned"]

/**
 * Registers the conformance tests for one backend under `describe(name)`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <E>(
  name: string,
  layer: Layer.Layer<Sandbox.Sandbox, E> | (() => Layer.Layer<Sandbox.Sandbox, E>),
  capabilities: Capabilities
): void => {
  // Layer.fresh: under an enclosing memo map (a surrounding `layer(...)`) the same layer value
  // would otherwise be built once and shared by every test.
  const fresh = Effect.suspend(() => Layer.build(Layer.fresh(typeof layer === "function" ? layer() : layer)))
  const test = <A, E2>(title: string, body: (sandbox: Sandbox.Service) => Effect.Effect<A, E2, Scope.Scope>) =>
    it.live(title, () => Effect.flatMap(fresh, (context) => body(Context.get(context, Sandbox.Sandbox))))

  const notSupported = (
    operation: string,
    call: (sandbox: Sandbox.Service) => Effect.Effect<unknown, Sandbox.SandboxError>
  ) =>
    test(`${operation} fails with NotSupported`, (sandbox) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* outcome(Effect.asVoid(call(sandbox))), {
          reason: "NotSupported",
          message: `The active sandbox does not support ${operation}`
        })
      }))

  describe(name, () => {
    describe("files", () => {
      test("writes a file with its missing parent directories and reads it back", (sandbox) =>
        Effect.gen(function*() {
          yield* sandbox.writeFile("a/b/c.txt", "héllo\nwörld\n")
          assert.strictEqual(yield* sandbox.read("a/b/c.txt"), "héllo\nwörld\n")
          assert.strictEqual(yield* sandbox.read(under(sandbox.cwd, "a/b/c.txt")), "héllo\nwörld\n")
          yield* sandbox.writeFile(under(sandbox.cwd, "abs/d.txt"), "absolute")
          assert.strictEqual(yield* sandbox.read("abs/d.txt"), "absolute")
        }))

      // Passes in any order when tests are isolated; fails after the test above when they are not.
      test("does not see files another test wrote", (sandbox) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* outcome(sandbox.read("a/b/c.txt")), {
            reason: "NotFound",
            message: "File not found: a/b/c.txt"
          })
        }))

      test("overwrites an existing file entirely", (sandbox) =>
        Effect.gen(function*() {
          yield* sandbox.writeFile("f.txt", "a first version, longer than the second\n")
          yield* sandbox.writeFile("f.txt", "second\n")
          assert.strictEqual(yield* sandbox.read("f.txt"), "second\n")
        }))

      test("returns bytes that are not UTF-8 unchanged from readFile and refuses them in read", (sandbox) =>
        Effect.gen(function*() {
          yield* sandbox.writeFile("bin/data.bin", new Uint8Array(nonUtf8))
          assert.deepStrictEqual(Array.from(yield* sandbox.readFile("bin/data.bin")), nonUtf8)
          assert.deepStrictEqual(yield* outcome(sandbox.read("bin/data.bin")), {
            reason: "Failed",
            message: `Cannot read bin/data.bin: the file is not valid UTF-8 text (${nonUtf8.length} bytes)`
          })
        }))

      test("fails with NotFound for a missing file, named as the caller wrote it", (sandbox) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* outcome(sandbox.read("missing.txt")), {
            reason: "NotFound",
            message: "File not found: missing.txt"
          })
          assert.deepStrictEqual(yield* outcome(sandbox.readFile("no/such/dir/file.txt")), {
            reason: "NotFound",
            message: "File not found: no/such/dir/file.txt"
          })
        }))

      test("fails with IsDirectory when reading a directory", (sandbox) =>
        Effect.gen(function*() {
          yield* sandbox.writeFile("dir/inner.txt", "inner")
          assert.deepStrictEqual(yield* outcome(sandbox.read("dir")), {
            reason: "IsDirectory",
            message: "dir is a directory, not a file"
          })
        }))
    })

    describe("file bounds", () => {
      test("bounds readFile and read by maxBytes, failing with TooLarge past it", (sandbox) =>
        Effect.gen(function*() {
          yield* sandbox.writeFile("f.txt", "eleven byte")
          assert.strictEqual(new TextDecoder().decode(yield* sandbox.readFile("f.txt", { maxBytes: 11 })), "eleven byte")
          assert.deepStrictEqual(yield* outcome(sandbox.readFile("f.txt", { maxBytes: 10 })), {
            reason: "TooLarge",
            message: "f.txt is larger than 10 bytes"
          })
          assert.deepStrictEqual(yield* outcome(sandbox.read("f.txt", { maxBytes: 10 })), {
            reason: "TooLarge",
            message: "f.txt is larger than 10 bytes"
          })
        }))

      test("streams a file over the default bound whole, which readFile and edit refuse", (sandbox) =>
        Effect.gen(function*() {
          const size = Sandbox.DEFAULT_MAX_FILE_BYTES + 1
          yield* sandbox.writeFile("big.txt", new Uint8Array(size).fill(0x61))
          const sizes = yield* Stream.runFold(sandbox.readStream("big.txt"), () => 0, (total, chunk) => total + chunk.length)
          assert.strictEqual(sizes, size)
          const tooLarge = { reason: "TooLarge", message: `big.txt is larger than ${Sandbox.DEFAULT_MAX_FILE_BYTES} bytes` }
          assert.deepStrictEqual(yield* outcome(sandbox.readFile("big.txt")), tooLarge)
          assert.deepStrictEqual(yield* outcome(sandbox.edit("big.txt", "a", "b")), tooLarge)
        }))

      test("fails readStream with NotFound and IsDirectory before any chunk", (sandbox) =>
        Effect.gen(function*() {
          yield* sandbox.writeFile("dir/inner.txt", "inner")
          assert.deepStrictEqual(yield* outcome(Stream.runDrain(sandbox.readStream("missing.txt"))), {
            reason: "NotFound",
            message: "File not found: missing.txt"
          })
          assert.deepStrictEqual(yield* outcome(Stream.runDrain(sandbox.readStream("dir"))), {
            reason: "IsDirectory",
            message: "dir is a directory, not a file"
          })
        }))

      // A named pipe and a device: each refused at once, never waited on (a wait would time the test out).
      const hostile = (sandbox: Sandbox.Service, pipe: string, zero: string | undefined) =>
        Effect.gen(function*() {
          const notRegular = (path: string, kind: string) => ({ reason: "NotRegularFile", message: `${path} is ${kind}, not a regular file` })
          assert.deepStrictEqual(yield* outcome(sandbox.readFile(pipe)), notRegular(pipe, "a named pipe"))
          assert.deepStrictEqual(yield* outcome(sandbox.read(pipe)), notRegular(pipe, "a named pipe"))
          assert.deepStrictEqual(yield* outcome(sandbox.writeFile(pipe, "x")), notRegular(pipe, "a named pipe"))
          if (zero !== undefined) {
            assert.deepStrictEqual(yield* outcome(sandbox.readFile(zero)), notRegular(zero, "a character device"))
          }
          assert.deepStrictEqual(yield* sandbox.exec("echo still here"), ran("still here\n"))
        })

      if (capabilities.hostFiles !== undefined) {
        test("refuses a named pipe and a device without waiting on them", (sandbox) =>
          Effect.gen(function*() {
            execFileSync("mkfifo", [path.join(sandbox.cwd, "pipe")])
            yield* hostile(sandbox, "pipe", capabilities.hostFiles === "everywhere" ? "/dev/zero" : undefined)
          }))
      } else if (capabilities.mount) {
        test("refuses a named pipe and a device in a mounted host directory without waiting on them", (sandbox) =>
          Effect.gen(function*() {
            const host = yield* hostDirectory({})
            execFileSync("mkfifo", [path.join(host, "pipe")])
            yield* sandbox.mount(host, under(sandbox.cwd, "host"), "read-write")
            yield* sandbox.mount("/dev", under(sandbox.cwd, "dev"), "read-only")
            yield* hostile(sandbox, "host/pipe", "dev/zero")
          }))
      }
    })

    describe("edit", () => {
      const original = "alpha beta beta\n"

      test("replaces text that occurs exactly once and writes the file", (sandbox) =>
        Effect.gen(function*() {
          yield* sandbox.writeFile("e.txt", original)
          assert.deepStrictEqual(yield* sandbox.edit("e.txt", "alpha", "omega"), {
            occurrences: 1,
            content: "omega beta beta\n"
          })
          assert.strictEqual(yield* sandbox.read("e.txt"), "omega beta beta\n")
        }))

      test("reports 0 occurrences and leaves the file untouched", (sandbox) =>
        Effect.gen(function*() {
          yield* sandbox.writeFile("e.txt", original)
          assert.deepStrictEqual(yield* sandbox.edit("e.txt", "gamma", "delta"), { occurrences: 0, content: original })
          assert.strictEqual(yield* sandbox.read("e.txt"), original)
        }))

      test("reports 2 occurrences and leaves the file untouched", (sandbox) =>
        Effect.gen(function*() {
          yield* sandbox.writeFile("e.txt", original)
          assert.deepStrictEqual(yield* sandbox.edit("e.txt", "beta", "delta"), { occurrences: 2, content: original })
          assert.strictEqual(yield* sandbox.read("e.txt"), original)
        }))

      test("fails with NotFound when the file is missing", (sandbox) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(yield* outcome(sandbox.edit("missing.txt", "a", "b")), {
            reason: "NotFound",
            message: "File not found: missing.txt"
          })
        }))
    })

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

    describe("glob", () => {
      if (!capabilities.glob) return notSupported("glob", (sandbox) => sandbox.glob("**/*"))

      test("returns files only, sorted, dotfiles included, relative to its cwd", (sandbox) =>
        Effect.gen(function*() {
          yield* seed(sandbox, globTree)
          assert.deepStrictEqual(yield* sandbox.glob("**/*.ts"), [
            ".hidden/d.ts",
            "src/.dot.ts",
            "src/a.ts",
            "src/b.ts",
            "src/nested/c.ts"
          ])
          assert.deepStrictEqual(yield* sandbox.glob("src/*"), ["src/.dot.ts", "src/a.ts", "src/b.ts"])
          assert.deepStrictEqual(yield* sandbox.glob("**/*.ts", { cwd: "src" }), [
            ".dot.ts",
            "a.ts",
            "b.ts",
            "nested/c.ts"
          ])
          assert.deepStrictEqual(yield* sandbox.glob("**/*.rs"), [])
        }))

      test("stops at limit, keeping the first paths in sorted order", (sandbox) =>
        Effect.gen(function*() {
          yield* seed(sandbox, globTree)
          assert.deepStrictEqual(yield* sandbox.glob("**/*.ts", { limit: 2 }), [".hidden/d.ts", "src/.dot.ts"])
        }))

      test("treats shell syntax in a pattern as text: nothing matches, nothing runs", (sandbox) =>
        Effect.gen(function*() {
          yield* seed(sandbox, globTree)
          const tree = Object.keys(globTree).sort()
          assert.deepStrictEqual(yield* sandbox.glob("**/*"), tree)
          for (const pattern of unsafePatterns) {
            assert.deepStrictEqual(yield* outcome(sandbox.glob(pattern)), { success: [] }, pattern)
          }
          assert.deepStrictEqual(yield* sandbox.glob("**/*"), tree)
          assert.deepStrictEqual(yield* sandbox.glob("**/pwned"), [])
        }))

      test("matches a hostile pattern in linear time and refuses brace explosions", (sandbox) =>
        Effect.gen(function*() {
          const name = "a".repeat(60)
          yield* sandbox.writeFile(`hostile/${name}`, "x")
          assert.deepStrictEqual(yield* sandbox.glob("*a*a*a*a*a*a*a*ab", { cwd: "hostile" }), [])
          assert.deepStrictEqual(yield* sandbox.glob("*a*a*a*a*a*a*a*a", { cwd: "hostile" }), [name])
          for (const pattern of ["{a,b}".repeat(22), "{1..10000000}", "x/{1..10000000}/*"]) {
            assert.deepStrictEqual(yield* outcome(sandbox.glob(pattern)), {
              reason: "InvalidPattern",
              message: `Invalid pattern ${pattern}: more than 256 brace alternatives`
            })
          }
        }))
    })

    describe("grep", () => {
      if (!capabilities.grep) return notSupported("grep", (sandbox) => sandbox.grep("alpha"))

      test("reports each matching line with its path and line number, hidden files skipped", (sandbox) =>
        Effect.gen(function*() {
          yield* seed(sandbox, grepTree)
          assert.deepStrictEqual(yield* matchesOf(sandbox, "alpha"), [
            { path: "src/a.ts", lineNumber: 3, line: "alpha()" },
            { path: "src/b.md", lineNumber: 1, line: "alpha in markdown" }
          ])
          assert.deepStrictEqual(yield* matchesOf(sandbox, "^const \\w+ = \\d$"), [
            { path: "src/a.ts", lineNumber: 1, line: "const Alpha = 1" },
            { path: "src/a.ts", lineNumber: 2, line: "const beta = 2" }
          ])
          assert.deepStrictEqual(yield* matchesOf(sandbox, "absent"), [])
        }))

      test("searches only the files the glob filter admits", (sandbox) =>
        Effect.gen(function*() {
          yield* seed(sandbox, grepTree)
          assert.deepStrictEqual(yield* matchesOf(sandbox, "alpha", { glob: "**/*.md" }), [
            { path: "src/b.md", lineNumber: 1, line: "alpha in markdown" }
          ])
        }))

      test("ignores case when caseSensitive is false", (sandbox) =>
        Effect.gen(function*() {
          yield* seed(sandbox, grepTree)
          assert.deepStrictEqual(yield* matchesOf(sandbox, "ALPHA", { caseSensitive: false }), [
            { path: "src/a.ts", lineNumber: 1, line: "const Alpha = 1" },
            { path: "src/a.ts", lineNumber: 3, line: "alpha()" },
            { path: "src/b.md", lineNumber: 1, line: "alpha in markdown" }
          ])
          assert.deepStrictEqual(yield* matchesOf(sandbox, "ALPHA"), [])
        }))

      test("stops at limit", (sandbox) =>
        Effect.gen(function*() {
          yield* seed(sandbox, grepTree)
          assert.deepStrictEqual(yield* matchesOf(sandbox, "alpha", { caseSensitive: false, limit: 2 }), [
            { path: "src/a.ts", lineNumber: 1, line: "const Alpha = 1" },
            { path: "src/a.ts", lineNumber: 3, line: "alpha()" }
          ])
        }))

      test("searches under path, a directory or a file, reporting paths relative to the sandbox cwd", (sandbox) =>
        Effect.gen(function*() {
          yield* seed(sandbox, grepTree)
          assert.deepStrictEqual(yield* matchesOf(sandbox, "beta", { path: "src" }), [
            { path: "src/a.ts", lineNumber: 2, line: "const beta = 2" }
          ])
          assert.deepStrictEqual(yield* matchesOf(sandbox, "alpha", { path: "src/b.md" }), [
            { path: "src/b.md", lineNumber: 1, line: "alpha in markdown" }
          ])
        }))

      test("fails with InvalidPattern for a pattern RE2 refuses, saying what RE2 accepts", (sandbox) =>
        Effect.gen(function*() {
          const refused = (pattern: string, why: string) => ({
            reason: "InvalidPattern",
            message: `Invalid pattern ${pattern}: ${why}. ${dialectHint}.`
          })
          assert.deepStrictEqual(yield* outcome(sandbox.grep("(unclosed")), refused("(unclosed", "missing closing ): `(unclosed`"))
          assert.deepStrictEqual(
            yield* outcome(sandbox.grep("foo(?=bar)")),
            refused("foo(?=bar)", "invalid or unsupported Perl syntax: `(?=`")
          )
          assert.deepStrictEqual(yield* outcome(sandbox.grep("(a)\\1")), refused("(a)\\1", "invalid escape sequence: `\\1`"))
          assert.deepStrictEqual(
            yield* outcome(sandbox.grep("x".repeat(4097))),
            refused("x".repeat(4097), "the pattern is longer than 4096 characters")
          )
        }))

      test("matches a catastrophic-backtracking pattern in linear time", (sandbox) =>
        Effect.gen(function*() {
          // On a backtracking engine the first line alone takes minutes (2^35 ways to fail).
          yield* sandbox.writeFile("redos.txt", `${"a".repeat(35)}!\n${"a".repeat(35)}\n`)
          assert.deepStrictEqual(yield* matchesOf(sandbox, "^(a+)+$", { path: "redos.txt" }), [
            { path: "redos.txt", lineNumber: 2, line: "a".repeat(35) }
          ])
        }))

      test("filters with a hostile glob in linear time and refuses brace explosions", (sandbox) =>
        Effect.gen(function*() {
          yield* sandbox.writeFile(`hostile/${"a".repeat(60)}`, "x\n")
          assert.deepStrictEqual(yield* matchesOf(sandbox, "x", { path: "hostile", glob: "*a*a*a*a*a*a*a*ab" }), [])
          for (const glob of ["{a,b}".repeat(22), "{1..10000000}"]) {
            assert.deepStrictEqual(yield* outcome(sandbox.grep("x", { glob })), {
              reason: "InvalidPattern",
              message: `Invalid pattern ${glob}: more than 256 brace alternatives`
            })
          }
        }))

      test("matches a line longer than 1 MiB on its first 1 MiB, and goes on after it", (sandbox) =>
        Effect.gen(function*() {
          const head = "needle " + "x".repeat(1024 * 1024)
          yield* sandbox.writeFile("long.txt", `${head}needle at the end\nneedle\n`)
          const matches = yield* matchesOf(sandbox, "needle", { path: "long.txt" })
          assert.deepStrictEqual(matches.map((m) => [m.lineNumber, m.line.length]), [[1, 1024 * 1024], [2, 6]])
          assert.deepStrictEqual(yield* matchesOf(sandbox, "at the end", { path: "long.txt" }), [])
        }))
    })

    describe("mount", () => {
      if (!capabilities.mount) return notSupported("mount", (sandbox) => sandbox.mount("/", "mnt", "read-only"))

      test("mounts a host directory read-only: its files read through the sandbox, writes refused", (sandbox) =>
        Effect.gen(function*() {
          const host = yield* hostDirectory({ "hello.txt": "from the host\n" })
          yield* sandbox.mount(host, under(sandbox.cwd, "mounted"), "read-only")
          assert.strictEqual(yield* sandbox.read("mounted/hello.txt"), "from the host\n")
          assert.deepStrictEqual(yield* sandbox.exec("cat mounted/hello.txt"), ran("from the host\n"))
          assert.deepStrictEqual(yield* outcome(sandbox.writeFile("mounted/new.txt", "x")), {
            reason: "ReadOnly",
            message: "mounted/new.txt is on a read-only filesystem"
          })
          assert.deepStrictEqual(fs.readdirSync(host), ["hello.txt"])
        }))
    })
  })
}
