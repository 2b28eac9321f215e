/**
 * The Mount tool, called as the Executor calls it, on a virtual sandbox and on a LocalSandbox
 * (which cannot mount): every text the model reads is asserted whole.
 */
import { Condukt, LocalSandbox, Sandbox } from "@condukt/core"
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Mount } from "../src/Mount.ts"
import { hostDir, ran, virtualContext } from "./support.ts"

describe("Mount", () => {
  it("tells the model what it does and that read-only is the default", () => {
    assert.strictEqual(Mount.name, "Mount")
    assert.strictEqual(
      Mount.description,
      "Mount a directory of the host machine into the sandbox so commands and file tools can reach it. " +
        'The mount is read-only unless mode is "read-write", in which case writes change the host directory. ' +
        "Symlinks inside the directory are not followed and `..` cannot leave it."
    )
    assert.deepStrictEqual(Mount.parameters, {
      type: "object",
      properties: {
        host_path: { type: "string", description: "The host directory to mount (absolute path)" },
        vfs_path: {
          type: "string",
          description: "Where the directory appears inside the sandbox (absolute, or relative to the working directory)"
        },
        mode: {
          type: "string",
          enum: ["read-only", "read-write"],
          description: 'Access mode (default "read-only"); "read-write" writes go straight to the host'
        }
      },
      required: ["host_path", "vfs_path"],
      additionalProperties: false
    })
  })

  it.effect("mounts read-only unless asked otherwise", () =>
    Effect.gen(function*() {
      const host = yield* hostDir({ "a.txt": "from host\n" })
      const { context, sandbox } = yield* virtualContext()
      assert.strictEqual(yield* ToolCall.run(Mount, { host_path: host, vfs_path: "/mnt/data" }, context), `Mounted ${host} at /mnt/data`)
      assert.deepStrictEqual(yield* sandbox.exec("cat /mnt/data/a.txt"), ran("from host\n"))
      assert.deepStrictEqual(
        yield* sandbox.exec("echo x > /mnt/data/a.txt"),
        ran("bash: write failed: read-only file system\n", 1)
      )
      assert.strictEqual(readFileSync(join(host, "a.txt"), "utf8"), "from host\n")
    }))

  it.effect("mounts read-write when asked", () =>
    Effect.gen(function*() {
      const host = yield* hostDir()
      const { context, sandbox } = yield* virtualContext()
      assert.strictEqual(
        yield* ToolCall.run(Mount, { host_path: host, vfs_path: "out", mode: "read-write" }, context),
        `Mounted ${host} at out`
      )
      yield* sandbox.exec("echo result > out/r.txt")
      assert.strictEqual(readFileSync(join(host, "r.txt"), "utf8"), "result\n")
    }))

  it.effect("says why a mount failed", () =>
    Effect.gen(function*() {
      const host = yield* hostDir({ "file.txt": "f" })
      const { context } = yield* virtualContext()
      assert.strictEqual(
        yield* ToolCall.failure(Mount, { host_path: join(host, "missing"), vfs_path: "/mnt/x" }, context),
        `Mount failed: ${join(host, "missing")} does not exist`
      )
      assert.strictEqual(
        yield* ToolCall.failure(Mount, { host_path: join(host, "file.txt"), vfs_path: "/mnt/x" }, context),
        `Mount failed: Cannot mount ${join(host, "file.txt")}: not a directory`
      )
      yield* ToolCall.run(Mount, { host_path: host, vfs_path: "/mnt/a" }, context)
      assert.strictEqual(
        yield* ToolCall.failure(Mount, { host_path: host, vfs_path: "/mnt/a/b" }, context),
        `Mount failed: Cannot mount ${host} at /mnt/a/b: inside existing mount '/mnt/a'`
      )
    }))

  it.effect("answers that a sandbox without runtime mounts cannot mount", () =>
    Effect.gen(function*() {
      const dir = yield* hostDir()
      const host = yield* hostDir()
      const local = Context.get(yield* Layer.build(LocalSandbox.layer({ cwd: dir }).pipe(Layer.provide(Condukt.layer))), Sandbox.Sandbox)
      assert.strictEqual(
        yield* ToolCall.failure(Mount, { host_path: host, vfs_path: "mnt" }, ToolCall.context(local)),
        "The active sandbox does not support runtime mounting"
      )
    }))
})
