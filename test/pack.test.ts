/**
 * The packages as a user gets them: every package under packages/ built, packed and installed
 * with plain npm into a project outside the workspace (test/support/consumer.ts); then the
 * tarballs linted (publint, attw), a program run on plain Node 22, a module typechecked, and the
 * copies of effect counted.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { publint } from "publint"
import { formatMessage } from "publint/utils"
import { root } from "./support/exec.ts"
import { bins, Consumer, layer as consumer, step, StepFailed, workspacePackages } from "./support/consumer.ts"

const node = path.join(root, "node_modules/.bin/node")
const tsc = path.join(root, "node_modules/.bin/tsc")
const attw = path.join(root, "node_modules/.bin/attw")

const tarballOf = (name: string) => Consumer.useSync(({ tarballs }) => tarballs.get(name)!)

layer(consumer, { timeout: "5 minutes", excludeTestServices: true })("packed and installed with plain npm", (it) => {
  for (const { manifest } of workspacePackages) {
    it.effect(`${manifest.name}: the tarball holds dist, src, the licence, the changelog and package.json`, () =>
      Effect.gen(function*() {
        const listing = yield* step("tar", root, "tar", ["tzf", yield* tarballOf(manifest.name)])
        const top = new Set(listing.split("\n").filter((line) => line !== "").map((line) => line.split("/")[1]))
        assert.deepStrictEqual([...top].sort(), ["CHANGELOG.md", "LICENSE", "dist", "package.json", "src"])
      }))

    it.effect(`${manifest.name}: its exports are the workspace's entries, each built with types`, () =>
      Effect.gen(function*() {
        const packed = JSON.parse(yield* step("tar", root, "tar", ["xzOf", yield* tarballOf(manifest.name), "package/package.json"]))
        // A blocked entry (`"./internal/*": null`) stays blocked in the tarball: a `./*` pattern
        // beside it would otherwise publish the internals.
        assert.deepStrictEqual(
          packed.exports,
          Object.fromEntries(Object.entries(manifest.exports).map(([entry, source]) => {
            if (source === null) return [entry, null]
            const built = source.replace(/^\.\/src\//, "./dist/").replace(/\.ts$/, "")
            return [entry, { types: `${built}.d.ts`, default: `${built}.js` }]
          }))
        )
      }))

    it.effect(`${manifest.name}: publint reports nothing`, () =>
      Effect.gen(function*() {
        const bytes = fs.readFileSync(yield* tarballOf(manifest.name))
        const tarball = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)
        const { messages, pkg } = yield* Effect.tryPromise({
          try: () => publint({ pack: { tarball }, level: "suggestion" }),
          catch: (cause) => new StepFailed({ step: "publint", output: String(cause) })
        })
        assert.deepStrictEqual(messages.map((message) => formatMessage(message, pkg, { color: false })), [])
      }))

    it.effect(`${manifest.name}: attw (ESM-only profile) reports nothing`, () =>
      Effect.gen(function*() {
        // attw exits non-zero on any problem the profile does not ignore; the table says which.
        yield* step("attw", root, attw, [yield* tarballOf(manifest.name), "--profile", "esm-only", "--no-color"])
      }))
  }

  it.effect("the packages are copies from the tarballs, not links into the workspace", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      for (const { manifest } of workspacePackages) {
        const installed = path.join(dir, "node_modules", manifest.name)
        assert.isFalse(fs.lstatSync(installed).isSymbolicLink(), manifest.name)
        assert.strictEqual(JSON.parse(fs.readFileSync(path.join(installed, "package.json"), "utf8")).version, manifest.version)
      }
    }))

  it.effect("a plain Node 22 ESM program runs a session on TestModel in a LocalSandbox and a VirtualSandbox", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      const output = yield* step("node program.js", dir, node, ["program.js", path.join(dir, "work")])
      assert.strictEqual(
        output,
        "local: hello from the host -> It says hello.\nvirtual: hello from memory -> It says hello.\n"
      )
    }))

  it.effect("a strict NodeNext TypeScript module typechecks against the installed declarations", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      assert.strictEqual(yield* step("tsc", dir, tsc, ["-p", "tsconfig.json"]), "")
    }))

  it.effect("effect at another 4.1 patch than ours is installed once, and so is each package (npm ls)", () =>
    Effect.gen(function*() {
      const { dir, effectVersion } = yield* Consumer
      for (const name of ["effect", ...workspacePackages.map(({ manifest }) => manifest.name)]) {
        // npm ls exits non-zero on a missing or unmet peer dependency too.
        const copies = yield* step("npm ls", dir, "npm", ["ls", name, "--all", "--parseable"])
        assert.deepStrictEqual(copies.split("\n").filter((line) => line !== ""), [path.join(dir, "node_modules", name)])
      }
      const installed = JSON.parse(fs.readFileSync(path.join(dir, "node_modules/effect/package.json"), "utf8"))
      assert.strictEqual(installed.version, effectVersion)
    }))

  for (const { bin, version } of bins) {
    it.effect(`npx ${bin} version runs with plain Node from the install`, () =>
      Effect.gen(function*() {
        const { dir } = yield* Consumer
        const output = yield* step(`npx ${bin} version`, dir, "npx", ["--no-install", bin, "version"])
        assert.include(output, version)
      }))
  }
})
