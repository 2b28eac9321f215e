/**
 * Every program of examples/ runs as a user would run it (`node examples/x.ts`, importing the
 * packages by name) and prints exactly what it shows: the output is asserted whole, stderr included,
 * so an example that breaks, drifts from what its docs page says, or makes Node print a warning
 * fails here. The example test file (examples/*.test.ts) runs in the `unit` project as a user's would.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { expected, normalized } from "./support/exampleOutputs.ts"
import { exec, root } from "./support/exec.ts"

const node = path.join(root, "node_modules/.bin/node")
const programs = fs.readdirSync(path.join(root, "examples")).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts")).sort()

describe("examples/", () => {
  it("has an expected output for each program, and a program for each expected output", () =>
    assert.deepStrictEqual(programs, Object.keys(expected).sort()))

  it("import the packages by name, as a user's copy would: no path into the workspace", () => {
    const files = fs.readdirSync(path.join(root, "examples")).filter((f) => f.endsWith(".ts")).sort()
    const workspacePaths = files.filter((f) => /from "\.|node_modules\/|\/packages\//.test(fs.readFileSync(path.join(root, "examples", f), "utf8")))
    assert.deepStrictEqual(workspacePaths, [])
  })

  it("are each linked from the docs page of their concept (the demo from the README)", () => {
    const pages = ["README.md", ...fs.readdirSync(path.join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]
      .map((page) => fs.readFileSync(path.join(root, page), "utf8"))
    const files = fs.readdirSync(path.join(root, "examples")).filter((f) => f.endsWith(".ts")).sort()
    assert.deepStrictEqual(files.filter((f) => !pages.some((page) => page.includes(`examples/${f})`))), [])
  })

  for (const example of programs) {
    it.live(`${example} prints what it shows`, () =>
      Effect.gen(function*() {
        // Provider keys are blanked: the suite never calls a real model (test/provider-env.test.ts
        // points the demo at a loopback server instead). TMPDIR fixes the paths tools.ts prints.
        const { exitCode, output } = yield* exec(node, [path.join("examples", example)], {
          ANTHROPIC_API_KEY: "",
          OPENAI_API_KEY: "",
          TMPDIR: "/tmp"
        })
        assert.strictEqual(normalized(output), expected[example])
        assert.strictEqual(exitCode, 0)
      }), 120_000)
  }
})
