/**
 * bench/browser-bundle — what Condukt's platform-free core weighs in a browser: esbuild bundles
 * test/support/browserCore/coreOnly.ts (an agent with the coding tools in a VirtualSandbox, on
 * @condukt/core and @condukt/sandbox-virtual alone) for a browser, minified, with the build the
 * browser test uses (test/support/browserCore/build.ts), and the bundle is gzipped (level 9).
 *
 * Two figures (ADR 0094):
 * 1. Ours, just-bash apart: the bundle with just-bash left external — core, sandbox-virtual,
 *    effect and re2js as the program uses them. Goal ≤ 400 KB gz (issue 43's, for what we build).
 *    Baseline: all of effect (`export * from "effect"`), the library most of it is.
 * 2. The whole bundle, just-bash's browser build in it. just-bash ships that build as one
 *    pre-bundled module of every command (its Node build loads commands lazily; its browser build
 *    does not), so no bundler can leave an unused command out, and it alone weighs about 360 KB
 *    gz: the issue's 400 KB cannot hold for the whole. Goal ≤ 700 KB gz. Baseline: just-bash's
 *    browser build alone, as the same build bundles it.
 *
 * Sizes do not depend on the machine's load. Run: `node_modules/.bin/node bench/browser-bundle.ts`.
 */
import { Effect } from "effect"
import * as zlib from "node:zlib"
import { type Bundle, build, type Entry } from "../test/support/browserCore/build.ts"
import { report } from "./report.ts"

const program = "test/support/browserCore/coreOnly.ts"

/** The gzipped size of a bundle, in KB (1,000 bytes, as the goal is written). */
const gzipped = ({ code }: Bundle) => zlib.gzipSync(code, { level: 9 }).length / 1000

const kb = (size: number) => `${size.toFixed(0)} KB gz`

/** Minified bytes in the bundle per package (a workspace package's directory, or an npm name). */
const byPackage = ({ metafile }: Bundle): Array<readonly [string, number]> => {
  const sizes = new Map<string, number>()
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const name = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules)/.exec(input)?.[1] ??
        /^(packages\/[^/]+)\//.exec(input)?.[1] ?? input
      sizes.set(name, (sizes.get(name) ?? 0) + bytesInOutput)
    }
  }
  return [...sizes].sort(([, a], [, b]) => b - a)
}

const weigh = async (name: string, entry: Entry, external: ReadonlyArray<string> = []) => {
  const bundle = await Effect.runPromise(build(entry, { minify: true, external }))
  const size = gzipped(bundle)
  console.log(`${name.padEnd(56)} ${(bundle.code.length / 1000).toFixed(0).padStart(6)} KB minified ${kb(size).padStart(10)}`)
  return { bundle, size }
}

const ours = await weigh("core + sandbox-virtual, just-bash external", program, ["just-bash"])
const whole = await weigh("core + sandbox-virtual + just-bash (browser build)", program)
const justBash = await weigh("just-bash alone (its browser build and dependencies)", {
  contents: `export * from "just-bash"`,
  resolveDir: "packages/sandbox-virtual"
})
const effect = await weigh("effect alone (export * from \"effect\")", { contents: `export * from "effect"`, resolveDir: "packages/core" })

console.log("\nminified bytes per package in the whole bundle:")
for (const [name, bytes] of byPackage(whole.bundle)) {
  if (bytes >= 1000) console.log(`  ${name.padEnd(40)} ${(bytes / 1000).toFixed(0).padStart(6)} KB`)
}

const OURS_GOAL = 400
const WHOLE_GOAL = 700

report({
  benchmark: "browser-bundle: core + virtual sandbox, just-bash apart / effect alone (min+gz)",
  ours: kb(ours.size),
  baseline: kb(effect.size),
  ratio: ours.size / effect.size,
  goal: `≤ ${OURS_GOAL} KB gz`,
  met: ours.size <= OURS_GOAL
})
report({
  benchmark: "browser-bundle: core + virtual sandbox with just-bash / just-bash alone (min+gz)",
  ours: kb(whole.size),
  baseline: kb(justBash.size),
  ratio: whole.size / justBash.size,
  goal: `≤ ${WHOLE_GOAL} KB gz (ADR 0094)`,
  met: whole.size <= WHOLE_GOAL
})
