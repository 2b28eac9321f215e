/**
 * VirtualSandbox mounts on real temporary host directories: read-only (reads work, every kind of
 * write fails and the host is unchanged), read-write (writes reach the host), no way out of a
 * mount, and the errors of a runtime mount.
 */
import type { Sandbox } from "@condukt/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as VirtualSandbox from "../src/VirtualSandbox.ts"
import { failure, hostDir, ran } from "./support.ts"

/** The matching lines of a grep that searched every file. */
const matchesOf = (sandbox: Sandbox.Service, pattern: string, options?: Sandbox.GrepOptions) =>
  Effect.map(sandbox.grep(pattern, options), (result) => {
    assert.deepStrictEqual(result.skipped, [])
    return result.matches
  })


/** A host directory `mounted/` (mounted read-only at /mnt/ro) beside a file the sandbox must not reach. */
const readOnlySetup = Effect.gen(function*() {
  const parent = yield* hostDir({ "secret.txt": "SECRET\n", "mounted/readme.md": "hello from host\n" })
  const host = join(parent, "mounted")
  symlinkSync(join(parent, "secret.txt"), join(host, "link"))
  const sandbox = yield* VirtualSandbox.make({ mounts: [{ hostPath: host, path: "/mnt/ro", mode: "read-only" }] })
  return { parent, host, sandbox }
})

describe("VirtualSandbox read-only mounts", () => {
  it.effect("reads through read, exec, glob and grep", () =>
    Effect.gen(function*() {
      const { sandbox } = yield* readOnlySetup
      assert.strictEqual(yield* sandbox.read("/mnt/ro/readme.md"), "hello from host\n")
      assert.deepStrictEqual(yield* sandbox.exec("cat /mnt/ro/readme.md; ls /mnt/ro"), ran("hello from host\nlink\nreadme.md\n"))
      assert.deepStrictEqual(yield* sandbox.glob("**/*", { cwd: "/mnt/ro" }), ["readme.md"])
      assert.deepStrictEqual(yield* matchesOf(sandbox, "host", { path: "/mnt" }), [
        { path: "/mnt/ro/readme.md", lineNumber: 1, line: "hello from host" }
      ])
    }))

  it.effect("refuses cp, rm, touch, mkdir, mv and redirects with a clear message; the host is unchanged", () =>
    Effect.gen(function*() {
      const { host, sandbox } = yield* readOnlySetup
      const refused = [
        ["cp /mnt/ro/readme.md /mnt/ro/copy.md", "cp: cannot copy '/mnt/ro/readme.md': EROFS: read-only file system, cp '/copy.md'\n"],
        ["rm /mnt/ro/readme.md", "rm: cannot remove '/mnt/ro/readme.md': EROFS: read-only file system, rm '/readme.md'\n"],
        ["touch /mnt/ro/new", "touch: cannot touch '/mnt/ro/new': EROFS: read-only file system, write '/new'\n"],
        ["mkdir /mnt/ro/d", "mkdir: cannot create directory '/mnt/ro/d': EROFS: read-only file system, mkdir '/d'\n"],
        ["mv /mnt/ro/readme.md /mnt/ro/z", "mv: cannot move '/mnt/ro/readme.md': EROFS: read-only file system, mv '/z'\n"],
        ["echo x > /mnt/ro/readme.md", "bash: write failed: read-only file system\n"],
        ["echo x >> /mnt/ro/readme.md", "bash: append failed: read-only file system\n"]
      ] as const
      for (const [command, output] of refused) assert.deepStrictEqual(yield* sandbox.exec(command), ran(output, 1), command)
      // just-bash rejects on a refused redirect, so what the script printed before it is lost.
      assert.deepStrictEqual(
        yield* sandbox.exec("echo before; echo x > /mnt/ro/f; echo after"),
        ran("bash: write failed: read-only file system\n", 1)
      )
      assert.deepStrictEqual(yield* failure(sandbox.writeFile("/mnt/ro/readme.md", "x")), {
        tag: "ReadOnly",
        message: "/mnt/ro/readme.md is on a read-only filesystem"
      })
      assert.deepStrictEqual(yield* failure(sandbox.writeFile("/mnt/ro/sub/new.txt", "x")), {
        tag: "ReadOnly",
        message: "/mnt/ro/sub/new.txt is on a read-only filesystem"
      })
      assert.strictEqual(readFileSync(join(host, "readme.md"), "utf8"), "hello from host\n")
      assert.deepStrictEqual(readdirSync(host).sort(), ["link", "readme.md"])
      assert.deepStrictEqual(yield* sandbox.exec("echo still usable"), ran("still usable\n"))
    }))

  it.effect("refuses rm -f and rm -rf as it refuses rm: the model is never told files were deleted", () =>
    Effect.gen(function*() {
      const { host, sandbox } = yield* readOnlySetup
      const refused = "rm: cannot remove '/mnt/ro/readme.md': EROFS: read-only file system, rm '/readme.md'\n"
      for (const command of ["rm /mnt/ro/readme.md", "rm -f /mnt/ro/readme.md", "rm -rf /mnt/ro/readme.md", "rm -fr -- /mnt/ro/readme.md"]) {
        assert.deepStrictEqual(yield* sandbox.exec(command), ran(refused, 1), command)
      }
      assert.deepStrictEqual(
        yield* sandbox.exec("rm -rf /mnt/ro"),
        ran("rm: cannot remove '/mnt/ro': EBUSY: mount point, cannot remove '/mnt/ro'\n", 1)
      )
      assert.deepStrictEqual(readdirSync(host).sort(), ["link", "readme.md"])
    }))

  it.effect("rm -f still ignores what is missing, and rm removes what it may", () =>
    Effect.gen(function*() {
      const { sandbox } = yield* readOnlySetup
      yield* sandbox.writeFile("d/a.txt", "a")
      assert.deepStrictEqual(yield* sandbox.exec("rm -f missing.txt; rm -f; echo $?"), ran("0\n"))
      assert.deepStrictEqual(
        yield* sandbox.exec("rm missing.txt; rm d; rm; rm -x d"),
        ran(
          [
            "rm: cannot remove 'missing.txt': No such file or directory",
            "rm: cannot remove 'd': Is a directory",
            "rm: missing operand",
            "rm: invalid option -- 'x'",
            ""
          ].join("\n"),
          1
        )
      )
      assert.deepStrictEqual(yield* sandbox.exec("rm -rv d/a.txt d && ls"), ran("removed 'd/a.txt'\nremoved 'd'\n"))
    }))

  it.effect("leads nowhere on the host: not by .., not by a symlink", () =>
    Effect.gen(function*() {
      const { parent, sandbox } = yield* readOnlySetup
      const escape = `/mnt/ro/../../..${parent}/secret.txt`
      assert.deepStrictEqual(
        yield* sandbox.exec(`cat /mnt/ro/../secret.txt; cat ${escape}; cat /mnt/ro/link`),
        ran(
          [
            "cat: /mnt/ro/../secret.txt: No such file or directory",
            `cat: ${escape}: No such file or directory`,
            "cat: /mnt/ro/link: No such file or directory",
            ""
          ].join("\n"),
          1
        )
      )
      assert.deepStrictEqual(yield* failure(sandbox.read("/mnt/ro/../secret.txt")), {
        tag: "NotFound",
        message: "File not found: /mnt/ro/../secret.txt"
      })
      assert.deepStrictEqual(yield* failure(sandbox.read("/mnt/ro/link")), {
        tag: "NotFound",
        message: "File not found: /mnt/ro/link"
      })
    }))
})

describe("VirtualSandbox read-write mounts", () => {
  it.effect("write through to the host directory, outside the in-memory budget", () =>
    Effect.gen(function*() {
      const host = yield* hostDir({ "old.txt": "old\n" })
      const sandbox = yield* VirtualSandbox.make({
        mounts: [{ hostPath: host, path: "work", mode: "read-write" }],
        limits: { maxFileSystemBytes: 1000 }
      })
      assert.deepStrictEqual(yield* sandbox.exec("echo new > work/new.txt && rm work/old.txt && ls work"), ran("new.txt\n"))
      yield* sandbox.writeFile("work/sub/big.bin", new Uint8Array(5000))
      assert.strictEqual(readFileSync(join(host, "new.txt"), "utf8"), "new\n")
      assert.deepStrictEqual(readdirSync(host).sort(), ["new.txt", "sub"])
      assert.strictEqual(readFileSync(join(host, "sub/big.bin")).length, 5000)
      writeFileSync(join(host, "from-host.txt"), "seen\n")
      assert.strictEqual(yield* sandbox.read("work/from-host.txt"), "seen\n")
    }))
})

describe("VirtualSandbox.mount at run time", () => {
  it.effect("mounts read-only or read-write, relative paths starting at cwd", () =>
    Effect.gen(function*() {
      const host = yield* hostDir({ "a.txt": "a\n" })
      const sandbox = yield* VirtualSandbox.make({ mountRoots: [host] })
      yield* sandbox.mount(host, "ro", "read-only")
      yield* sandbox.mount(host, "/mnt/rw", "read-write")
      assert.deepStrictEqual(yield* sandbox.exec("cat ro/a.txt; echo b > /mnt/rw/b.txt; cat ro/b.txt"), ran("a\nb\n"))
      assert.deepStrictEqual(yield* sandbox.exec("echo c > ro/c.txt"), ran("bash: write failed: read-only file system\n", 1))
    }))

  it.effect("names what is wrong with the host path or the mount point", () =>
    Effect.gen(function*() {
      const host = yield* hostDir({ "file.txt": "f" })
      const sandbox = yield* VirtualSandbox.make({ mountRoots: [host] })
      assert.deepStrictEqual(yield* failure(sandbox.mount(join(host, "missing"), "/mnt/x", "read-only")), {
        tag: "NotFound",
        message: `File not found: ${join(host, "missing")}`
      })
      assert.deepStrictEqual(yield* failure(sandbox.mount(join(host, "file.txt"), "/mnt/x", "read-only")), {
        tag: "Failed",
        message: `Cannot mount ${join(host, "file.txt")}: not a directory`
      })
      yield* sandbox.mount(host, "/mnt/a", "read-only")
      assert.deepStrictEqual(yield* failure(sandbox.mount(host, "/mnt/a/b", "read-only")), {
        tag: "Failed",
        message: `Cannot mount ${host} at /mnt/a/b: inside existing mount '/mnt/a'`
      })
      assert.deepStrictEqual(yield* failure(sandbox.mount(host, "/", "read-only")), {
        tag: "Failed",
        message: `Cannot mount ${host} at /: the root cannot be a mount point`
      })
    }))

  it.effect("exposes only the process's working directory by default, judged on real paths; the real path is what gets mounted", () =>
    Effect.gen(function*() {
      const outside = yield* hostDir({ "secret.txt": "SECRET\n" })
      const sandbox = yield* VirtualSandbox.make()
      const project = process.cwd()
      yield* sandbox.mount(project, "/mnt/project", "read-only")
      assert.deepStrictEqual(yield* sandbox.exec("test -f /mnt/project/package.json && echo found"), ran("found\n"))
      assert.deepStrictEqual(yield* failure(sandbox.mount(outside, "/mnt/x", "read-only")), {
        tag: "OutsideAllowedPaths",
        message: `Path ${outside} is outside allowed directories`
      })
      assert.deepStrictEqual(yield* failure(sandbox.mount("/", "/mnt/x", "read-only")), {
        tag: "OutsideAllowedPaths",
        message: "Path / is outside allowed directories"
      })
    }))

  it.effect("mountRoots bound runtime mounts, not the mounts made at start; [] allows none", () =>
    Effect.gen(function*() {
      const root = yield* hostDir({ "inside/a.txt": "in\n" })
      const other = yield* hostDir({ "b.txt": "b\n" })
      symlinkSync(other, join(root, "escape"))
      const sandbox = yield* VirtualSandbox.make({
        mountRoots: [root],
        mounts: [{ hostPath: other, path: "/mnt/start", mode: "read-only" }]
      })
      assert.deepStrictEqual(yield* sandbox.exec("cat /mnt/start/b.txt"), ran("b\n"))
      assert.deepStrictEqual(yield* failure(sandbox.mount(join(root, "escape"), "/mnt/x", "read-only")), {
        tag: "OutsideAllowedPaths",
        message: `Path ${join(root, "escape")} is outside allowed directories`
      })
      yield* sandbox.mount(join(root, "inside"), "/mnt/in", "read-only")
      assert.deepStrictEqual(yield* sandbox.exec("cat /mnt/in/a.txt"), ran("in\n"))
      const closed = yield* VirtualSandbox.make({ mountRoots: [] })
      assert.deepStrictEqual(yield* failure(closed.mount(root, "/mnt/x", "read-only")), {
        tag: "OutsideAllowedPaths",
        message: `Path ${root} is outside allowed directories`
      })
    }))
})

describe("VirtualSandbox host directories", () => {
  it.effect("are its mounts, those made at start and at run time, in order (the roots its MCP servers get)", () =>
    Effect.gen(function*() {
      const root = yield* hostDir({ "inside/a.txt": "in\n" })
      const other = yield* hostDir({ "b.txt": "b\n" })
      const sandbox = yield* VirtualSandbox.make({ mountRoots: [root], mounts: [{ hostPath: other, path: "/mnt/start", mode: "read-only" }] })
      assert.deepStrictEqual(sandbox.hostDirectories?.(), [other])
      yield* sandbox.mount(join(root, "inside"), "/mnt/in", "read-only")
      assert.deepStrictEqual(sandbox.hostDirectories?.(), [other, join(root, "inside")])
      assert.deepStrictEqual((yield* VirtualSandbox.make()).hostDirectories?.(), [])
    }))
})
