/** LocalSandbox's `list` and `stat` on real temporary directories: entry types, links, missing paths, allowedPaths. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import * as Sandbox from "@condukt/core/Sandbox"
import * as LocalSandbox from "../../src/sandbox/Local.ts"

const host = Layer.merge(NodeServices.layer, ProcessBudget.layer())

/** A directory with a file, a folder, a link to each, and a dangling link. */
const tree = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "condukt-listing-"))
    writeFileSync(join(dir, "notes.md"), "twelve bytes")
    mkdirSync(join(dir, "src"))
    symlinkSync("notes.md", join(dir, "link.md"))
    symlinkSync("src", join(dir, "link-dir"))
    symlinkSync("gone", join(dir, "dangling"))
    return dir
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const built = Effect.gen(function*() {
  return yield* Sandbox.Sandbox
})

const failureOf = <A>(effect: Effect.Effect<A, Sandbox.SandboxError>) =>
  Effect.flip(effect).pipe(Effect.map((error) => ({ method: error.method, reason: error.reason._tag, message: error.message })))

describe("LocalSandbox list and stat", () => {
  it.effect("list gives each entry's own type: a link is a link, whatever it points to", () =>
    Effect.gen(function*() {
      const cwd = yield* tree
      const sandbox = yield* LocalSandbox.make({ cwd })
      const entries = [...yield* sandbox.list(".")].sort((a, b) => a.name.localeCompare(b.name))
      assert.deepStrictEqual(entries, [
        { name: "dangling", type: "symlink" },
        { name: "link-dir", type: "symlink" },
        { name: "link.md", type: "symlink" },
        { name: "notes.md", type: "file" },
        { name: "src", type: "directory" }
      ])
      assert.deepStrictEqual(yield* sandbox.list("src"), [])
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("stat follows links, as read does, and gives the size and modification time", () =>
    Effect.gen(function*() {
      const cwd = yield* tree
      const sandbox = yield* LocalSandbox.make({ cwd })
      const modified = statSync(join(cwd, "notes.md")).mtimeMs
      assert.deepStrictEqual(yield* sandbox.stat("notes.md"), { type: "file", size: 12, modified })
      assert.deepStrictEqual(yield* sandbox.stat("link.md"), { type: "file", size: 12, modified })
      assert.strictEqual((yield* sandbox.stat("link-dir")).type, "directory")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("a missing path, a dangling link and a file listed as a directory are typed failures naming the path", () =>
    Effect.gen(function*() {
      const cwd = yield* tree
      const sandbox = yield* LocalSandbox.make({ cwd })
      assert.deepStrictEqual(yield* failureOf(sandbox.stat("missing.md")), {
        method: "stat",
        reason: "NotFound",
        message: "File not found: missing.md"
      })
      assert.strictEqual((yield* failureOf(sandbox.stat("dangling"))).reason, "NotFound")
      assert.strictEqual((yield* failureOf(sandbox.list("missing"))).reason, "NotFound")
      assert.deepStrictEqual(yield* failureOf(sandbox.list("notes.md")), {
        method: "list",
        reason: "Failed",
        message: "Cannot list notes.md: not a directory"
      })
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("with allowedPaths, a path outside the roots is refused before it is looked at", () =>
    Effect.gen(function*() {
      const cwd = yield* tree
      const sandbox = yield* LocalSandbox.make({ cwd: join(cwd, "src"), allowedPaths: ["."] })
      assert.strictEqual((yield* failureOf(sandbox.list(".."))).reason, "OutsideAllowedPaths")
      assert.strictEqual((yield* failureOf(sandbox.stat("../notes.md"))).reason, "OutsideAllowedPaths")
      assert.deepStrictEqual(yield* sandbox.list("."), [])
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("sessions built from one layer value share one service: what it remembers is remembered for all", () =>
    Effect.gen(function*() {
      const cwd = yield* tree
      const layer = LocalSandbox.layer({ cwd })
      const first = yield* Effect.provide(built, layer)
      const second = yield* Effect.provide(built, layer)
      assert.strictEqual(first, second)
      const other = yield* Effect.provide(built, LocalSandbox.layer({ cwd }))
      assert.notStrictEqual(first, other)
    }).pipe(Effect.scoped, Effect.provide(host)))
})
