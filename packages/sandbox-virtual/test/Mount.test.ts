/**
 * The Mount tool, called as the Executor calls it, on a virtual sandbox and on a LocalSandbox
 * (which cannot mount): the sandbox's roots, the mode ceiling, and every text the model reads,
 * asserted whole.
 */
import { Sandbox } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { ToolCall } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { readFileSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { Mount } from "../src/Mount.ts"
import { hostDir, ran, virtualContext } from "./support.ts"

describe("Mount", () => {
  it("tells the model what it does, that the sandbox decides where, and that mounts are read-only by default", () => {
    const mount = Mount()
    assert.strictEqual(mount.name, "Mount")
    assert.strictEqual(
      mount.description,
      "Mount a directory of the host machine into the sandbox so commands and file tools can reach it. " +
        "Only the host directories the sandbox allows, or directories below them, may be mounted; a refusal names them. " +
        "Mounts are read-only. " +
        "Symlinks inside the directory are not followed and `..` cannot leave it."
    )
    assert.strictEqual(
      Mount({ maxMode: "read-write" }).description,
      "Mount a directory of the host machine into the sandbox so commands and file tools can reach it. " +
        "Only the host directories the sandbox allows, or directories below them, may be mounted; a refusal names them. " +
        'The mount is read-only unless mode is "read-write", in which case writes change the host directory. ' +
        "Symlinks inside the directory are not followed and `..` cannot leave it."
    )
    assert.deepStrictEqual(mount.parameters, {
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

  it.effect("with no options, on a sandbox with default settings, mounts the process's working directory and refuses what lies outside it", () =>
    Effect.gen(function*() {
      const outside = yield* hostDir({ "a.txt": "a" })
      const { context, sandbox } = yield* virtualContext()
      const project = process.cwd()
      assert.strictEqual(
        yield* ToolCall.run(Mount(), { host_path: project, vfs_path: "/mnt/project" }, context),
        `Mounted ${project} at /mnt/project`
      )
      assert.deepStrictEqual(
        yield* sandbox.exec("test -f /mnt/project/package.json && echo found"),
        ran("found\n")
      )
      assert.strictEqual(
        yield* ToolCall.failure(Mount(), { host_path: outside, vfs_path: "/mnt/data" }, context),
        `Mount failed: ${outside} is outside the directories that may be mounted (${project})`
      )
      assert.deepStrictEqual(yield* sandbox.exec("ls /mnt/data"), ran("ls: /mnt/data: No such file or directory\n", 2))
    }))

  it.effect("mounts nothing when the sandbox allows no root", () =>
    Effect.gen(function*() {
      const { context } = yield* virtualContext({ mountRoots: [] })
      assert.strictEqual(
        yield* ToolCall.failure(Mount(), { host_path: process.cwd(), vfs_path: "/mnt/data" }, context),
        "Mount failed: no host directory may be mounted in this session"
      )
    }))

  it.effect("refuses a path outside the sandbox's roots, symlinks resolved, and mounts one below a root", () =>
    Effect.gen(function*() {
      const root = yield* hostDir({ "inside/a.txt": "in\n" })
      const other = yield* hostDir({ "secret.txt": "no" })
      symlinkSync(other, join(root, "escape"))
      const { context, sandbox } = yield* virtualContext({ mountRoots: [root] })
      const mount = Mount()
      assert.strictEqual(
        yield* ToolCall.failure(mount, { host_path: other, vfs_path: "/mnt/x" }, context),
        `Mount failed: ${other} is outside the directories that may be mounted (${root})`
      )
      assert.strictEqual(
        yield* ToolCall.failure(mount, { host_path: join(root, "escape"), vfs_path: "/mnt/x" }, context),
        `Mount failed: ${join(root, "escape")} is outside the directories that may be mounted (${root})`
      )
      const climbing = `${root}/../${other.slice(other.lastIndexOf("/") + 1)}`
      assert.strictEqual(
        yield* ToolCall.failure(mount, { host_path: climbing, vfs_path: "/mnt/x" }, context),
        `Mount failed: ${climbing} is outside the directories that may be mounted (${root})`
      )
      assert.strictEqual(
        yield* ToolCall.run(mount, { host_path: join(root, "inside"), vfs_path: "/mnt/in" }, context),
        `Mounted ${join(root, "inside")} at /mnt/in`
      )
      assert.deepStrictEqual(yield* sandbox.exec("cat /mnt/in/a.txt; ls /mnt"), ran("in\nin\n"))
    }))

  it.effect("refuses read-write unless maxMode allows it", () =>
    Effect.gen(function*() {
      const host = yield* hostDir()
      const { context } = yield* virtualContext({ mountRoots: [host] })
      assert.strictEqual(
        yield* ToolCall.failure(Mount(), { host_path: host, vfs_path: "/mnt/x", mode: "read-write" }, context),
        `Mount failed: read-write mounts are not allowed here; mount ${host} read-only`
      )
    }))

  it.effect("mounts read-only unless asked otherwise", () =>
    Effect.gen(function*() {
      const host = yield* hostDir({ "a.txt": "from host\n" })
      const { context, sandbox } = yield* virtualContext({ mountRoots: [host] })
      assert.strictEqual(
        yield* ToolCall.run(Mount({ maxMode: "read-write" }), { host_path: host, vfs_path: "/mnt/data" }, context),
        `Mounted ${host} at /mnt/data`
      )
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
      const { context, sandbox } = yield* virtualContext({ mountRoots: [host] })
      assert.strictEqual(
        yield* ToolCall.run(Mount({ maxMode: "read-write" }), { host_path: host, vfs_path: "out", mode: "read-write" }, context),
        `Mounted ${host} at out`
      )
      yield* sandbox.exec("echo result > out/r.txt")
      assert.strictEqual(readFileSync(join(host, "r.txt"), "utf8"), "result\n")
    }))

  it.effect("says why a mount failed", () =>
    Effect.gen(function*() {
      const host = yield* hostDir({ "file.txt": "f" })
      const { context } = yield* virtualContext({ mountRoots: [host] })
      const mount = Mount()
      assert.strictEqual(
        yield* ToolCall.failure(mount, { host_path: join(host, "missing"), vfs_path: "/mnt/x" }, context),
        `Mount failed: ${join(host, "missing")} does not exist`
      )
      assert.strictEqual(
        yield* ToolCall.failure(mount, { host_path: join(host, "file.txt"), vfs_path: "/mnt/x" }, context),
        `Mount failed: Cannot mount ${join(host, "file.txt")}: not a directory`
      )
      yield* ToolCall.run(mount, { host_path: host, vfs_path: "/mnt/a" }, context)
      assert.strictEqual(
        yield* ToolCall.failure(mount, { host_path: host, vfs_path: "/mnt/a/b" }, context),
        `Mount failed: Cannot mount ${host} at /mnt/a/b: inside existing mount '/mnt/a'`
      )
    }))

  it.effect("with no options, answers that a sandbox without runtime mounts cannot mount, wherever the host path is", () =>
    Effect.gen(function*() {
      const dir = yield* hostDir()
      const host = yield* hostDir()
      const local = Context.get(yield* Layer.build(LocalSandbox.layer({ cwd: dir }).pipe(Layer.provide(Condukt.layer))), Sandbox.Sandbox)
      assert.strictEqual(
        yield* ToolCall.failure(Mount(), { host_path: host, vfs_path: "mnt" }, ToolCall.context(local)),
        "The active sandbox does not support runtime mounting"
      )
      assert.strictEqual(
        yield* ToolCall.failure(Mount(), { host_path: process.cwd(), vfs_path: "mnt" }, ToolCall.context(local)),
        "The active sandbox does not support runtime mounting"
      )
    }))
})
