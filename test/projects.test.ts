/**
 * The three test projects (vitest.config.ts, docs/decisions/0045-test-projects.md): every test file
 * of the repository runs in exactly one, so `vitest run` runs each once and no new file is skipped;
 * and the `unit` project refuses processes and sockets.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { createVitest } from "vitest/node"
import { integration, release } from "../vitest.config.ts"
import { refusal } from "./support/unitGuard.ts"

const root = path.resolve(import.meta.dirname, "..")

/** Every `*.test.ts` file of the repository, node_modules left out, relative to the root. */
const testFiles = (): Array<string> =>
  fs.readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== "node_modules" && entry.name !== ".git")
    .flatMap((top) =>
      fs.readdirSync(path.join(root, top.name), { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".test.ts") && !file.split(path.sep).includes("node_modules"))
        .map((file) => path.join(top.name, file))
    )
    .sort()

describe("test projects", () => {
  it.live("every test file is in exactly one project of unit, integration and release", () =>
    Effect.gen(function*() {
      const vitest = yield* Effect.acquireRelease(
        Effect.promise(() => createVitest({ root, config: path.join(root, "vitest.config.ts"), watch: false, reporters: [] })),
        (vitest) => Effect.promise(() => vitest.close())
      )
      const specifications = yield* Effect.promise(() => vitest.globTestSpecifications())
      const projects = new Map<string, Array<string>>()
      for (const specification of specifications) {
        const file = path.relative(root, specification.moduleId)
        projects.set(file, [...(projects.get(file) ?? []), specification.project.name])
      }
      const files = testFiles()
      assert.deepStrictEqual(
        files.filter((file) => projects.get(file)?.length !== 1).map((file) => [file, projects.get(file) ?? []]),
        []
      )
      assert.deepStrictEqual([...projects.keys()].sort(), files)
      // A listed name that matches no file (a file renamed, say) would send the file to `unit` unseen.
      const stale = Object.entries({ integration, release }).flatMap(([project, patterns]) =>
        patterns.filter((pattern) => {
          const prefix = pattern.includes("*") ? pattern.slice(0, pattern.indexOf("*")) : pattern
          return !files.some((file) => file.startsWith(prefix) && projects.get(file)?.[0] === project)
        })
      )
      assert.deepStrictEqual(stale, [])
      // Each project keeps the root's tags: a timing-sensitive test is retried wherever it runs.
      assert.deepStrictEqual(
        vitest.projects.map((project) => [project.name, project.config.tags.map((tag) => [tag.name, tag.retry])]),
        ["unit", "integration", "release"].map((name) => [name, [["timing-sensitive", 2]]])
      )
    }).pipe(Effect.scoped))

  let attempts = 0
  it("a test tagged timing-sensitive runs again after a failure", { tags: ["timing-sensitive"] }, () => {
    attempts++
    assert.strictEqual(attempts, 2, "the first attempt fails on purpose; the retry passes")
  })

  it("a unit file that starts a process or listens on a socket fails, naming the call and where the file goes", () => {
    assert.throws(() => childProcess.execFileSync("true"), refusal("child_process.execFileSync"))
    assert.throws(() => childProcess.spawn("true"), refusal("child_process.spawn"))
    assert.throws(() => net.createServer().listen(0), refusal("net.Server.listen"))
    assert.strictEqual(
      refusal("child_process.spawn"),
      "child_process.spawn in a unit test: list this file under integration in vitest.config.ts (docs/decisions/0045-test-projects.md)"
    )
  })
})
