/**
 * The packages as a user gets them: every package under packages/ built, packed and installed
 * with plain npm into a project outside the workspace by the steps of docs/your-project.md
 * (test/support/consumer.ts); then the install's output and tree checked (a line with no flag, no
 * ERESOLVE, no `redis`, nor after a later plain `npm install`), the examples and doc blocks that
 * import Effect's Node platform run from it, the guide's program run under type stripping and
 * after `tsc`, a Node older than 22 (the system's, or Node 20 from npm where the system's is newer)
 * refused in one sentence (the import), named in the guide (a `.ts` file, with the line to Node 22)
 * and warned of by npm without ERESOLVE, the tarballs linted
 * (publint, attw), a program run on plain Node 22, sandbox-virtual's host mounts as a browser build
 * and Node each resolve them, a strict module typechecked, and the copies of effect counted.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { publint } from "publint"
import { formatMessage } from "publint/utils"
import { build } from "./support/browserCore/build.ts"
import { expected, normalized } from "./support/exampleOutputs.ts"
import { execIn, root } from "./support/exec.ts"
import { bins, Consumer, guide, layer as consumer, plainEnv, shell, step, StepFailed, workspacePackages } from "./support/consumer.ts"

const node = path.join(root, "node_modules/.bin/node")
const tsc = path.join(root, "node_modules/.bin/tsc")
const attw = path.join(root, "node_modules/.bin/attw")
/** The system's Node: 20 here and in CI, older than the host packages need; newer on some hosts. */
const systemNode = "/usr/bin/node"

/**
 * A Node older than 22, as a user may have, and its version: the system's where it is older, else
 * Node 20 fetched as the guide fetches 22 (`npx -y node@20`), so the cases below test the same thing
 * on a host whose Node is newer.
 */
const olderNode = Effect.gen(function*() {
  const version = (file: string) => Effect.map(step(`${file} --version`, root, file, ["-p", "process.versions.node"]), (output) => output.trim())
  if (fs.existsSync(systemNode)) {
    const system = yield* version(systemNode)
    if (Number(system.split(".")[0]) < 22) return { node: systemNode, version: system }
  }
  const fetched = (yield* step("npx -y node@20", root, "npx", ["-y", "node@20", "-p", "process.execPath"])).trim()
  return { node: fetched, version: yield* version(fetched) }
})

/** What the guide's src/main.ts prints. */
const answer = `ES modules: package.json says "type": "module".\n`

/** npm's lines about a peer dependency it could not resolve. */
const eresolve = (output: string) => output.split("\n").filter((line) => line.includes("ERESOLVE"))

/** What of `redis` (and its `@redis/*` modules) the install holds. */
const redis = (dir: string) => fs.readdirSync(path.join(dir, "node_modules")).filter((name) => /redis/.test(name))

/** Examples that need what the install lacks, and what. */
const needsMore: Record<string, string> = {
  "mcp.ts": "an MCP server's npm package (@modelcontextprotocol/server-everything, as its comment says to install)"
}

/**
 * The examples that import Effect's Node platform, each run from the install as the workspace runs
 * it (test/examples.test.ts) and printing the same: all but those of `needsMore`.
 */
const platformExamples = fs.readdirSync(path.join(root, "examples"))
  .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts") && !(file in needsMore))
  .filter((file) => /from "@effect\/platform-node[^"]*"/.test(fs.readFileSync(path.join(root, "examples", file), "utf8")))
  .sort()

const tarballOf = (name: string) => Consumer.useSync(({ tarballs }) => tarballs.get(name)!)

layer(consumer, { timeout: "5 minutes", excludeTestServices: true })("packed and installed with plain npm", (it) => {
  it.effect("the guide's one install line is a plain npm install, prints no ERESOLVE warning and installs no redis", () =>
    Effect.gen(function*() {
      const { dir, installOutput } = yield* Consumer
      assert.deepStrictEqual(guide.install.split(/\s+/).filter((word) => word.startsWith("-")), [])
      assert.deepStrictEqual(eresolve(installOutput), [])
      assert.deepStrictEqual(redis(dir), [])
    }))

  it.effect("finds the examples that import Effect's Node platform (14 of them at least, and mcp.ts, which needs more)", () =>
    Effect.sync(() => assert.isAtLeast(platformExamples.length, 14)))

  for (const name of platformExamples) {
    it.effect(`examples/${name} (it imports Effect's Node platform) runs from the install as it does in the workspace`, () =>
      Effect.gen(function*() {
        const { dir } = yield* Consumer
        fs.mkdirSync(path.join(dir, "examples"), { recursive: true })
        // The examples directory whole: an example may start another (the cluster client its runners) or read a file beside it.
        fs.cpSync(path.join(root, "examples"), path.join(dir, "examples"), { recursive: true })
        const { exitCode, stderr, stdout } = yield* shell(dir, `ANTHROPIC_API_KEY= OPENAI_API_KEY= TMPDIR=/tmp node examples/${name}`)
        assert.deepStrictEqual({ exitCode, output: normalized(stdout + stderr) }, { exitCode: 0, output: expected[name] })
      }))
  }

  it.effect("every ts block of docs/ that imports a platform package or an HTTP client loads from the install", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      const blocks = fs.readdirSync(path.join(root, "docs")).filter((file) => file.endsWith(".md")).sort().flatMap((file) =>
        [...fs.readFileSync(path.join(root, "docs", file), "utf8").matchAll(/```ts\n([\s\S]*?)```/g)]
          .map(([, body], index) => ({ name: `${file.replace(/\.md$/, "")}-${index}`, body: body! }))
          .filter(({ body }) => /from "(@effect\/platform-[^"]*|effect\/http)"/.test(body))
      )
      // The guide's own src/main.ts runs above; these only load (their exports are not run).
      assert.isAbove(blocks.length, 0)
      fs.mkdirSync(path.join(dir, "snippets"), { recursive: true })
      const failed: Array<string> = []
      for (const { body, name } of blocks) {
        if (/\bNodeRuntime\.runMain\b/.test(body)) continue
        fs.writeFileSync(path.join(dir, "snippets", `${name}.ts`), body)
        const { exitCode, stderr } = yield* shell(dir, `node --input-type=module -e 'await import("./snippets/${name}.ts")'`)
        if (exitCode !== 0) failed.push(`${name}: ${stderr.split("\n").find((line) => line.includes("Error")) ?? stderr}`)
      }
      assert.deepStrictEqual(failed, [])
    }))

  it.effect("a later plain npm install (as `npm i -D typescript` runs) brings no redis back and prints no ERESOLVE", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      const { exitCode, stderr, stdout } = yield* shell(dir, "npm install --no-audit --no-fund --prefer-offline")
      assert.deepStrictEqual({ exitCode, eresolve: eresolve(`${stdout}${stderr}`), redis: redis(dir) }, {
        exitCode: 0,
        eresolve: [],
        redis: []
      })
    }))

  it.effect("the guide's src/main.ts prints its answer, run by Node's type stripping", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      const { exitCode, stderr, stdout } = yield* shell(dir, guide.runs.get("type stripping")!)
      assert.deepStrictEqual({ exitCode, stderr, stdout }, { exitCode: 0, stderr: "", stdout: answer })
    }))

  it.effect("the guide's src/main.ts compiled by tsc with the guide's tsconfig.json prints the same", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      // The workspace's tsc stands for the `typescript` the guide installs; @types/node is in the
      // tree already (through @types/ws).
      const { exitCode, stderr, stdout } = yield* shell(dir, guide.runs.get("tsc")!.replace(/^npx tsc\b/, tsc))
      assert.deepStrictEqual({ exitCode, stderr, stdout }, { exitCode: 0, stderr: "", stdout: answer })
    }))

  it.effect("the guide's src/main.ts without Condukt.layer fails naming it, as the guide says", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      const main = fs.readFileSync(path.join(dir, "src/main.ts"), "utf8")
      const forgot = main.replace("Effect.provide(Condukt.layer), ", "")
      assert.notStrictEqual(forgot, main)
      fs.writeFileSync(path.join(dir, "forgot.ts"), forgot)
      // NodeRuntime.runMain logs the failure (with Effect's logger, on stdout), then exits 1.
      const { exitCode, stdout } = yield* shell(dir, "node forgot.ts")
      const first = stdout.split("\n")[0]!
      const said = "SessionError: Agent reader: the sandbox could not be built: no sandbox: pass the sandbox option, give the agent one, provide a Sandbox layer, or use Condukt.layer"
      assert.deepStrictEqual({ exitCode, said: first.slice(first.indexOf("SessionError: ")) }, { exitCode: 1, said })
      assert.include(fs.readFileSync(path.join(root, "docs/your-project.md"), "utf8").replace(/\s+/g, " "), said.split("built: ")[1]!)
    }))

  it.effect("on a Node older than 22, importing @condukt/node prints one sentence and exits 1", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      const { node: older, version } = yield* olderNode
      assert.isBelow(Number(version.split(".")[0]), 22, `${older} is Node ${version}`)
      const { exitCode, stderr, stdout } = yield* shell(dir, `${older} --input-type=module -e 'import "@condukt/node"'`)
      assert.deepStrictEqual({ exitCode, stderr, stdout }, {
        exitCode: 1,
        stderr: `Condukt needs Node.js 22.19 or newer; this is Node.js ${version}.\n`,
        stdout: ""
      })
    }))

  it.effect("on a Node older than 22, `node src/main.ts` fails with Node's own error, which the guide names beside its one line to Node 22", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      // Node 20 refuses the file before any module of ours loads: no sentence of ours can run first.
      const { exitCode, stderr } = yield* shell(dir, `${(yield* olderNode).node} src/main.ts`)
      const code = /\bcode: '([A-Z_]+)'/.exec(stderr)?.[1]
      assert.deepStrictEqual({ exitCode, code }, { exitCode: 1, code: "ERR_UNKNOWN_FILE_EXTENSION" })
      const page = fs.readFileSync(path.join(root, "docs/your-project.md"), "utf8")
      const oneLine = /<!-- node 22 -->\n```sh\n(.*)\n```/.exec(page)?.[1]
      assert.deepStrictEqual({ names: page.includes(code!), oneLine }, { names: true, oneLine: "npx -y node@22 src/main.ts" })
      // That line with Node 22 in place of the one npx fetches runs the guide's program.
      const run = yield* shell(dir, oneLine!.replace(/^npx -y node@22\b/, node))
      assert.deepStrictEqual({ exitCode: run.exitCode, stderr: run.stderr, stdout: run.stdout }, { exitCode: 0, stderr: "", stdout: answer })
    }))

  it.effect("on a Node older than 22, the guide's install line warns only that the Node is too old: no ERESOLVE", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      const { node: older } = yield* olderNode
      // A dry run beside the project (the same ../tarballs): npm resolves the whole tree, where the
      // ERESOLVE warnings come from, and writes nothing.
      const beside = path.join(dir, "../node20")
      fs.mkdirSync(beside)
      fs.copyFileSync(path.join(dir, "package.json"), path.join(beside, "package.json"))
      const { exitCode, stderr, stdout } = yield* execIn(beside, "sh", ["-c", `${guide.install} --dry-run --no-audit --no-fund --prefer-offline`], {
        ...plainEnv(),
        PATH: [path.dirname(older), process.env["PATH"] ?? ""].join(path.delimiter)
      })
      const engines = `${stdout}${stderr}`.split("\n").filter((line) => line.includes("EBADENGINE Unsupported engine")).length
      assert.deepStrictEqual({ exitCode, eresolve: eresolve(`${stdout}${stderr}`), warnsOfEngines: engines > 0 }, {
        exitCode: 0,
        eresolve: [],
        warnsOfEngines: true
      })
    }))

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

  it.effect("@condukt/sandbox-virtual from the install: bundled for a browser it takes the host mounts that mount nothing (no node:fs), and Node takes the host's", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      // esbuild with `platform: "browser"` and nothing configured for the package: its `#hostMount`
      // import follows the `browser` condition (the build's one plugin is just-bash's zlib).
      const { metafile } = yield* build({ contents: `export { VirtualSandbox } from "@condukt/sandbox-virtual"`, resolveDir: dir })
      const inputs = Object.keys(metafile.inputs)
      assert.deepStrictEqual({
        hostMount: inputs.flatMap((input) => /node_modules\/@condukt\/sandbox-virtual\/(.*hostMount[^/]*)$/.exec(input)?.[1] ?? []),
        node: inputs.filter((input) => /(^|:)node:/.test(input))
      }, { hostMount: ["dist/internal/hostMount.browser.js"], node: ["no-zlib:node:zlib"] })
      // Node follows `default`: a host directory mounted at start is read through.
      const host = path.join(dir, "mounted")
      fs.mkdirSync(host, { recursive: true })
      fs.writeFileSync(path.join(host, "hello.txt"), "from the host\n")
      fs.writeFileSync(
        path.join(dir, "mounts.js"),
        [
          `import { VirtualSandbox } from "@condukt/sandbox-virtual"`,
          `import { Effect } from "effect"`,
          `const mounts = [{ hostPath: process.argv[2], path: "/mnt/host", mode: "read-only" }]`,
          `const read = Effect.flatMap(VirtualSandbox.make({ mounts }), (sandbox) => sandbox.exec("cat /mnt/host/hello.txt"))`,
          `process.stdout.write((await Effect.runPromise(Effect.scoped(read))).output)`
        ].join("\n")
      )
      assert.strictEqual(yield* step("node mounts.js", dir, node, ["mounts.js", host]), "from the host\n")
    }))

  it.effect("a strict NodeNext TypeScript module typechecks against the installed declarations", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      assert.strictEqual(yield* step("tsc", dir, tsc, ["-p", "tsconfig.strict.json"]), "")
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

  it.effect("npx condukt check loads what its command needs (a module of dist loaded on demand) from the install", () =>
    Effect.gen(function*() {
      const { dir } = yield* Consumer
      fs.copyFileSync(path.join(root, "examples/workflows/word-counts.hcl"), path.join(dir, "word-counts.hcl"))
      const output = yield* step("npx condukt check word-counts.hcl", dir, "npx", ["--no-install", "condukt", "check", "word-counts.hcl"])
      assert.strictEqual(output, "ok: word-counts.hcl\n")
    }))
})
