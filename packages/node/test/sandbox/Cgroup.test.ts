/**
 * Cgroup.find on a given directory: which hierarchy it is, and what is missing when it cannot hold
 * a process limit. The kernel's files are stood in for by plain ones in a temporary directory (the
 * real v1 hierarchy is exercised through real commands in Confine.test.ts; this machine's cgroup2
 * has no pids controller, so v2 is seen here only).
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import * as Cgroup from "../../src/sandbox/Cgroup.ts"

/** A temporary directory holding `files`, removed with the scope. */
const directory = (files: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const made = mkdtempSync(join(tmpdir(), "condukt-cgroup-"))
      for (const [name, content] of Object.entries(files)) writeFileSync(join(made, name), content)
      return made
    }),
    (made) => Effect.sync(() => rmSync(made, { recursive: true, force: true }))
  )

describe("Cgroup.find", () => {
  it.effect("a v2 directory with pids available gives it to its children, then holds the commands' cgroups", () =>
    Effect.gen(function*() {
      const given = yield* directory({ "cgroup.controllers": "cpu io memory pids\n", "cgroup.subtree_control": "" })
      assert.deepStrictEqual(Cgroup.find(given), { version: 2, directory: given })
      assert.strictEqual(readFileSync(join(given, "cgroup.subtree_control"), "utf8"), "+pids")
    }).pipe(Effect.scoped))

  it.effect("says what is missing: a v2 directory without pids, a directory that is no cgroup, one that does not exist", () =>
    Effect.gen(function*() {
      const v2 = yield* directory({ "cgroup.controllers": "hugetlb\n", "cgroup.subtree_control": "" })
      const plain = yield* directory({})
      assert.deepStrictEqual(
        [Cgroup.find(v2), Cgroup.find(plain), Cgroup.find("/nonexistent/cgroup")],
        [
          `the pids controller is not available in ${v2}`,
          `${plain} is not a cgroup directory with the pids controller`,
          "/nonexistent/cgroup does not exist"
        ]
      )
    }).pipe(Effect.scoped))

  it.effect("a v1 pids directory is taken as it is", () =>
    Effect.gen(function*() {
      const v1 = yield* directory({ "pids.max": "max\n", tasks: "" })
      assert.deepStrictEqual(Cgroup.find(v1), { version: 1, directory: v1 })
    }).pipe(Effect.scoped))
})
