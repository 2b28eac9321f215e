/**
 * conformanceFiles — the files part of the sandbox conformance suite: read, write, bounds and hostile files, edit.
 */
import { Sandbox } from "@condukt/core"
import { assert, describe } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { hostDirectory, nonUtf8, outcome, ran, type Suite, under } from "./conformance.ts"

export const register = ({ capabilities, notSupported, test }: Suite): void => {
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
}
