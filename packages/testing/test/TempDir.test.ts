/**
 * TempDir on the real file system: a directory made with files holds them (parents made), its
 * path is the real one under the OS's temporary directory, and it is gone with everything in it
 * once its scope closes; two directories are never one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as TempDir from "../src/TempDir.ts"

/** Every file under `dir`, relative path → content, sorted by path. */
const contents = (dir: string) =>
  Object.fromEntries(
    fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).sort()
      .filter((file) => fs.statSync(path.join(dir, file)).isFile())
      .map((file) => [file, fs.readFileSync(path.join(dir, file), "utf8")])
  )

describe("TempDir", () => {
  it.live("a directory made with files holds them, and is removed with everything in it when its scope closes", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const dir = yield* Scope.provide(TempDir.withFiles({ "a.txt": "one", "deep/er/b.txt": new TextEncoder().encode("two") }, "condukt-tempdir-"), scope)
      assert.deepStrictEqual(
        { parent: path.dirname(dir), name: /^condukt-tempdir-\w{6}$/.test(path.basename(dir)), files: contents(dir) },
        { parent: fs.realpathSync(os.tmpdir()), name: true, files: { "a.txt": "one", "deep/er/b.txt": "two" } }
      )
      // Something the test wrote itself goes too.
      fs.writeFileSync(path.join(dir, "deep", "c.txt"), "three")
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(fs.existsSync(dir))
    }))

  it.live("make gives an empty directory of its own each time", () =>
    Effect.gen(function*() {
      const [a, b] = yield* Effect.all([TempDir.make(), TempDir.make()])
      assert.deepStrictEqual(
        { distinct: a !== b, a: fs.readdirSync(a), b: fs.readdirSync(b), prefix: [path.basename(a), path.basename(b)].every((name) => name.startsWith("condukt-")) },
        { distinct: true, a: [], b: [], prefix: true }
      )
    }))
})
