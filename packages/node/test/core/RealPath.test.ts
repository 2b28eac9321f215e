/** realPath on real directories: kernel-style symlink walking, the 40-hop limit, directory boundaries. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem } from "effect"
import { realpathSync } from "node:fs"
import * as RealPath from "@condukt/core/RealPath"

/** A fresh temporary directory (its real path), removed with the test's scope. */
const setup = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const dir = realpathSync(yield* fs.makeTempDirectoryScoped({ prefix: "condukt-realpath-" }))
  yield* fs.makeDirectory(`${dir}/b/c`, { recursive: true })
  yield* fs.writeFileString(`${dir}/b/c/file.txt`, "x")
  return { fs, dir }
})

describe("realPath", () => {
  it.effect("splices a relative symlink target into the remaining components", () =>
    Effect.gen(function*() {
      const { dir, fs } = yield* setup
      yield* fs.symlink("b/c", `${dir}/rel`)
      assert.strictEqual(yield* RealPath.resolve(fs, `${dir}/rel/file.txt`), `${dir}/b/c/file.txt`)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("restarts at the root for an absolute symlink target", () =>
    Effect.gen(function*() {
      const { dir, fs } = yield* setup
      yield* fs.symlink(`${dir}/b`, `${dir}/abs`)
      assert.strictEqual(yield* RealPath.resolve(fs, `${dir}/abs/c/file.txt`), `${dir}/b/c/file.txt`)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("applies .. to the real directory a symlink led to, as the kernel does", () =>
    Effect.gen(function*() {
      const { dir, fs } = yield* setup
      yield* fs.symlink(`${dir}/b/c`, `${dir}/deep`)
      // Lexically this would be `${dir}/other.txt`; the kernel goes up from b/c.
      assert.strictEqual(yield* RealPath.resolve(fs, `${dir}/deep/../other.txt`), `${dir}/b/other.txt`)
      assert.strictEqual(realpathSync.native(`${dir}/deep/..`), `${dir}/b`)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("keeps components that do not exist yet, and drops . and repeated slashes", () =>
    Effect.gen(function*() {
      const { dir, fs } = yield* setup
      assert.strictEqual(yield* RealPath.resolve(fs, `${dir}/b/./missing//deeper/f.txt`), `${dir}/b/missing/deeper/f.txt`)
      assert.strictEqual(yield* RealPath.resolve(fs, `${dir}/missing/../b`), `${dir}/b`)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("follows a chain of 40 links and refuses 41, like the kernel", () =>
    Effect.gen(function*() {
      const { dir, fs } = yield* setup
      yield* fs.symlink(`${dir}/b/c/file.txt`, `${dir}/l1`)
      for (let i = 2; i <= 41; i++) yield* fs.symlink(`l${i - 1}`, `${dir}/l${i}`)
      assert.strictEqual(yield* RealPath.resolve(fs, `${dir}/l40`), `${dir}/b/c/file.txt`)
      const error = yield* Effect.flip(RealPath.resolve(fs, `${dir}/l41`))
      assert.strictEqual(error.message, `Path ${dir}/l41 cannot be resolved: too many levels of symbolic links`)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("ends a symlink loop with TooManySymlinks", () =>
    Effect.gen(function*() {
      const { dir, fs } = yield* setup
      yield* fs.symlink("loop-b", `${dir}/loop-a`)
      yield* fs.symlink("loop-a", `${dir}/loop-b`)
      const error = yield* Effect.flip(RealPath.resolve(fs, `${dir}/loop-a/file.txt`))
      assert.strictEqual(error._tag, "TooManySymlinks")
      assert.strictEqual(error.message, `Path ${dir}/loop-a/file.txt cannot be resolved: too many levels of symbolic links`)
    }).pipe(Effect.provide(NodeServices.layer)))

  it("isWithin checks a directory boundary, not a string prefix", () => {
    assert.isTrue(RealPath.isWithin("/tmp/x/proj", "/tmp/x/proj"))
    assert.isTrue(RealPath.isWithin("/tmp/x/proj/a/b.txt", "/tmp/x/proj"))
    assert.isFalse(RealPath.isWithin("/tmp/x/proj-secrets/key.txt", "/tmp/x/proj"))
    assert.isFalse(RealPath.isWithin("/tmp/x", "/tmp/x/proj"))
    assert.isTrue(RealPath.isWithin("/etc/passwd", "/"))
  })

  it.effect("check returns the real path inside a root, and names the expanded path outside", () =>
    Effect.gen(function*() {
      const { dir, fs } = yield* setup
      yield* fs.symlink(`${dir}/b`, `${dir}/to-b`)
      yield* fs.symlink("/etc", `${dir}/b/etc`)
      const roots = [`${dir}/b`]
      assert.strictEqual(yield* RealPath.check(fs, `${dir}/to-b/c/file.txt`, "shown", roots), `${dir}/b/c/file.txt`)
      const error = yield* Effect.flip(RealPath.check(fs, `${dir}/b/etc/passwd`, `${dir}/b/etc/passwd`, roots))
      assert.strictEqual(error.message, `Path ${dir}/b/etc/passwd is outside allowed directories`)
      assert.deepStrictEqual(error._tag === "OutsideAllowedPaths" ? error.allowed : [], roots)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("a root that cannot be resolved admits nothing", () =>
    Effect.gen(function*() {
      const { dir, fs } = yield* setup
      yield* fs.symlink("loop-b", `${dir}/loop-a`)
      yield* fs.symlink("loop-a", `${dir}/loop-b`)
      // Read lexically, `loop-a/..` would be `dir` itself and admit `dir/b`.
      const error = yield* Effect.flip(RealPath.check(fs, `${dir}/b`, "b", [`${dir}/loop-a/..`]))
      assert.strictEqual(error.message, "Path b is outside allowed directories")
    }).pipe(Effect.provide(NodeServices.layer)))
})
