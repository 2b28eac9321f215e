import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { exec, root } from "./support/exec.ts"

const node = path.join(root, "node_modules/.bin/node")
const examples = fs.readdirSync(path.join(root, "examples")).filter((f) => f.endsWith(".ts")).sort()

describe("examples/", () => {
  it("has examples", () => assert.isAbove(examples.length, 0))

  for (const example of examples) {
    it.live(`${example} runs to completion`, () =>
      Effect.gen(function*() {
        // Each example checks its own results and exits non-zero when they are wrong. Provider keys
        // are blanked: the suite never calls a real model (test/provider-env.test.ts points the demo
        // at a loopback server instead).
        const { exitCode, output } = yield* exec(node, [path.join("examples", example)], { ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "" })
        assert.strictEqual(exitCode, 0, output)
        assert.notStrictEqual(output, "")
      }), 120_000)
  }
})
