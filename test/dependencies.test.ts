/**
 * The shape of the packages (issue 21, ADR 0047): dependency-cruiser checks every package's src/
 * against .dependency-cruiser.cjs (no import cycles; core imports no Node module and no other
 * Condukt package; only the Node composition root, cli and workflows import the providers; nothing
 * but cli imports workflows or cli), and core's sources and manifest are read for Node itself; every
 * package's sources and manifests, for `@effect/platform-node` (its redis peer).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { cruise, type ICruiseResult } from "dependency-cruiser"
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")
const packages = fs.readdirSync(path.join(root, "packages")).filter((name) => fs.existsSync(path.join(root, "packages", name, "src")))

/** The cruise over every package's src/, once for the file. */
const cruised: Effect.Effect<ICruiseResult> = Effect.cached(
  Effect.promise(async () => {
    const options = await extractDepcruiseOptions(path.join(root, ".dependency-cruiser.cjs"))
    const { output } = await cruise(packages.map((name) => `packages/${name}/src`), { ...options, baseDir: root })
    return output as ICruiseResult
  })
).pipe(Effect.runSync)

/** Every file under `dir`, recursively, relative to the repository. */
const filesUnder = (dir: string): Array<string> =>
  fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(path.join(dir, entry.name)) : [path.join(dir, entry.name)]
  )

describe("the dependency rules", () => {
  it.effect("hold: no cycle, no forbidden import (dependency-cruiser, .dependency-cruiser.cjs)", () =>
    Effect.gen(function*() {
      const result = yield* cruised
      assert.deepStrictEqual(
        result.summary.violations.map(({ rule, from, to, cycle }) =>
          `${rule.name}: ${from} -> ${to}${cycle === undefined ? "" : ` (${cycle.map(({ name }) => name).join(" -> ")})`}`
        ),
        []
      )
    }))

  it.effect("are checked over every package, imports between packages resolved to their sources", () =>
    Effect.gen(function*() {
      const result = yield* cruised
      const sources = result.modules.map(({ source }) => source)
      for (const name of packages) assert.isTrue(sources.some((source) => source.startsWith(`packages/${name}/src/`)), name)
      const condukt = result.modules.find(({ source }) => source === "packages/node/src/Condukt.ts")
      const targets = condukt?.dependencies.map(({ resolved }) => resolved) ?? []
      assert.include(targets, "packages/providers/src/Anthropic.ts")
      assert.include(targets, "packages/core/src/Model.ts")
      const unresolved = result.modules.flatMap(({ source, dependencies }) =>
        dependencies.filter(({ module, couldNotResolve }) => couldNotResolve && module.startsWith("@condukt/")).map(({ module }) => `${source}: ${module}`)
      )
      assert.deepStrictEqual(unresolved, [])
    }))
})

describe("@condukt/core", () => {
  it("imports no node: module in any source file", () => {
    const imports = filesUnder("packages/core/src").filter((file) => file.endsWith(".ts")).flatMap((file) =>
      [...fs.readFileSync(path.join(root, file), "utf8").matchAll(/(?:from|import)\s*\(?\s*["'](node:[^"']+)["']/g)]
        .map(([, module]) => `${file}: ${module}`)
    )
    assert.deepStrictEqual(imports, [])
  })

  it("depends on no @effect/platform-node, in any kind of dependency", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, "packages/core/package.json"), "utf8"))
    const kinds = ["dependencies", "peerDependencies", "optionalDependencies", "devDependencies"]
    assert.deepStrictEqual(kinds.filter((kind) => "@effect/platform-node" in (manifest[kind] ?? {})), [])
  })
})

describe("every package", () => {
  it("depends on no @effect/platform-node (npm installs its redis peer with it, ADR 0091), in what a user installs", () => {
    const kinds = ["dependencies", "peerDependencies", "optionalDependencies"]
    const found = packages.flatMap((name) => {
      const manifest = JSON.parse(fs.readFileSync(path.join(root, `packages/${name}/package.json`), "utf8"))
      return kinds.filter((kind) => "@effect/platform-node" in (manifest[kind] ?? {})).map((kind) => `${name}: ${kind}`)
    })
    assert.deepStrictEqual(found, [])
  })

  it("imports nothing of @effect/platform-node, its index or its modules (the shared package has what we use)", () => {
    const imports = packages.flatMap((name) => filesUnder(`packages/${name}/src`)).filter((file) => file.endsWith(".ts")).flatMap(
      (file) =>
        [...fs.readFileSync(path.join(root, file), "utf8").matchAll(/(?:from|import)\s*\(?\s*["']@effect\/platform-node(?:\/[^"']*)?["']/g)]
          .map(() => file)
    )
    assert.deepStrictEqual(imports, [])
  })
})
