/**
 * Snapshots of a virtual sandbox: the exact JSON a tree becomes, a round trip through JSON text
 * into a new sandbox, mounts left out, and the byte budget holding on restore.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Snapshot from "../src/Snapshot.ts"
import * as VirtualSandbox from "../src/VirtualSandbox.ts"
import { failure, hostDir, ran } from "./support.ts"

const decode = Schema.decodeUnknownEffect(Schema.fromJsonString(Snapshot.Snapshot))

describe("Snapshot", () => {
  it.effect("a fresh sandbox has an empty snapshot: the standard layout is left out", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make()
      assert.deepStrictEqual(yield* sandbox.snapshot, { version: 1, entries: [] })
    }))

  it.effect("holds text, bytes as base64, modes, empty directories and symlinks, sorted by path", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ files: { "src/a.txt": "héllo\n" } })
      yield* sandbox.writeFile("img.bin", new Uint8Array([0xff, 0x00, 0x01]))
      yield* sandbox.exec("printf '#!/bin/bash\\necho run\\n' > run.sh && chmod 755 run.sh")
      yield* sandbox.exec("mkdir -p empty/inner && ln -s src/a.txt link && mkdir /tmp/scratch")
      assert.deepStrictEqual(yield* sandbox.snapshot, {
        version: 1,
        entries: [
          { type: "directory", path: "/home/user/empty/inner" },
          { type: "file", path: "/home/user/img.bin", encoding: "base64", content: "/wAB" },
          { type: "symlink", path: "/home/user/link", target: "src/a.txt" },
          { type: "file", path: "/home/user/run.sh", encoding: "utf8", content: "#!/bin/bash\necho run\n", mode: 0o755 },
          { type: "file", path: "/home/user/src/a.txt", encoding: "utf8", content: "héllo\n" },
          { type: "directory", path: "/tmp/scratch" }
        ]
      })
    }))

  it.effect("restores through JSON text into a new sandbox that works the same", () =>
    Effect.gen(function*() {
      const first = yield* VirtualSandbox.make({ files: { "src/a.txt": "alpha\n" } })
      yield* first.writeFile("data.bin", new Uint8Array([0, 159, 146, 150]))
      yield* first.exec("printf 'echo ran\\n' > run.sh && chmod +x run.sh && ln -s src/a.txt link && mkdir empty")
      const saved = yield* first.snapshot
      const second = yield* VirtualSandbox.make({ snapshot: yield* decode(JSON.stringify(saved)) })
      assert.deepStrictEqual(yield* second.snapshot, saved)
      assert.deepStrictEqual([...(yield* second.readFile("data.bin"))], [0, 159, 146, 150])
      assert.deepStrictEqual(yield* second.exec("./run.sh; cat link; ls -d empty"), ran("ran\nalpha\nempty\n"))
    }))

  it.effect("seed files are written over the snapshot", () =>
    Effect.gen(function*() {
      const snapshot: Snapshot.Snapshot = {
        version: 1,
        entries: [{ type: "file", path: "/home/user/a.txt", encoding: "utf8", content: "from the snapshot" }]
      }
      const sandbox = yield* VirtualSandbox.make({ snapshot, files: { "a.txt": "from files" } })
      assert.strictEqual(yield* sandbox.read("a.txt"), "from files")
    }))

  it.effect("leaves mounted host directories out", () =>
    Effect.gen(function*() {
      const host = yield* hostDir({ "host.txt": "host" })
      const sandbox = yield* VirtualSandbox.make({
        files: { "mine.txt": "mine" },
        mounts: [{ hostPath: host, path: "/mnt/host", mode: "read-write" }]
      })
      yield* sandbox.exec("echo more > /mnt/host/more.txt")
      assert.deepStrictEqual(yield* sandbox.snapshot, {
        version: 1,
        entries: [{ type: "file", path: "/home/user/mine.txt", encoding: "utf8", content: "mine" }]
      })
    }))

  it.effect("a snapshot larger than the byte budget does not restore", () =>
    Effect.gen(function*() {
      const snapshot: Snapshot.Snapshot = {
        version: 1,
        entries: [{ type: "file", path: "/home/user/big.txt", encoding: "utf8", content: "x".repeat(2000) }]
      }
      assert.deepStrictEqual(yield* failure(VirtualSandbox.make({ snapshot, limits: { maxFileSystemBytes: 1000 } })), {
        tag: "Failed",
        message: "Cannot restore /home/user/big.txt: no space left in the sandbox (its filesystem holds at most 1000 bytes)"
      })
    }))

  it.effect("the schema refuses a snapshot of an unknown version", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(decode(JSON.stringify({ version: 2, entries: [] })))
      assert.strictEqual(error._tag, "SchemaError")
    }))
})
