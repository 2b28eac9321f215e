import { assert, describe, it } from "@effect/vitest"
import { Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Cli from "@condukt/cli"
import * as Cluster from "@condukt/cluster"
import * as Core from "@condukt/core"
import * as Mcp from "@condukt/mcp"
import * as Node from "@condukt/node"
import * as Providers from "@condukt/providers"
import * as SandboxVirtual from "@condukt/sandbox-virtual"
import * as Testing from "@condukt/testing"
// The workspace root does not depend on workflows (only the CLI does): its sources, then.
import * as Workflows from "../packages/workflows/src/index.ts"

// One spelling for each thing (ADR 0046), read off what every package exports: a Layer value is
// a module-level `layer` / `layerX`, and no class carries statics (a service's layers and
// constructors are the module's, never `Service.Service.layer`).
const packages = { Cli, Cluster, Core, Mcp, Node, Providers, SandboxVirtual, Testing, Workflows }

const exported = Object.entries(packages).flatMap(([pkg, modules]) =>
  Object.entries(modules as Record<string, Record<string, unknown>>).flatMap(([module, members]) =>
    Object.entries(members).map(([name, value]) => ({ path: `${pkg}.${module}.${name}`, name, value }))
  )
)

const root = path.resolve(import.meta.dirname, "..")

/** Every `.ts` file under `dir`, relative to the repository, sorted. */
const sourcesUnder = (dir: string): Array<string> =>
  fs.readdirSync(path.join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => path.join(dir, file))
    .sort()

/** Lines as `wc -l` counts them: line breaks. */
const lineCount = (file: string): number => fs.readFileSync(path.join(root, file), "utf8").split("\n").length - 1

const isClass = (value: unknown): value is Function =>
  typeof value === "function" && Function.prototype.toString.call(value).startsWith("class")

describe("conventions", () => {
  it("every Layer exported is named layer or layerX", () => {
    const layers = exported.filter(({ value }) => Layer.isLayer(value))
    assert.isAbove(layers.length, 0)
    assert.deepStrictEqual(layers.filter(({ name }) => !/^layer([A-Z]|$)/.test(name)).map(({ path }) => path), [])
  })

  it("no exported class has statics of its own", () => {
    const classes = exported.filter(({ value }) => isClass(value))
    assert.isAbove(classes.length, 0)
    assert.deepStrictEqual(
      classes.flatMap(({ path, value }) =>
        Object.getOwnPropertyNames(value).filter((key) => !["length", "name", "prototype"].includes(key)).map((key) => `${path}.${key}`)
      ),
      []
    )
  })

  // A module past ~400 lines holds more than one concept (STYLE.md 2.1): split it by concept.
  it("no core source file is over 400 lines", () => {
    const over = sourcesUnder("packages/core/src").filter((file) => lineCount(file) > 400)
    assert.deepStrictEqual(over, [])
  })
})
