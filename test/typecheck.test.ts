import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { exec, root } from "./support/exec.ts"

// Every ```ts block of the README and docs/ is a complete module: extract them and typecheck them.
const extractDocExamples = () => {
  const out = path.join(root, ".docs-examples")
  fs.rmSync(out, { recursive: true, force: true })
  fs.mkdirSync(out)
  let count = 0
  const docs = fs.readdirSync(path.join(root, "docs"), { recursive: true, encoding: "utf8" }).map((file) => `docs/${file}`)
  for (const file of ["README.md", ...docs]) {
    if (!file.endsWith(".md")) continue
    const text = fs.readFileSync(path.join(root, file), "utf8")
    let n = 0
    for (const match of text.matchAll(/```ts\n([\s\S]*?)```/g)) {
      fs.writeFileSync(path.join(out, `${file.replace(/[/.]/g, "_")}_${++n}.ts`), match[1]!)
      count++
    }
  }
  return count
}

describe("the repository", () => {
  it("runs on Node 22", () => {
    assert.strictEqual(process.versions.node.split(".")[0], "22")
  })

  it.live("typechecks, docs examples included", () =>
    Effect.gen(function*() {
      const examples = extractDocExamples()
      assert.isAbove(examples, 0)
      const { exitCode, output } = yield* exec(path.join(root, "node_modules/.bin/tsc"), ["-b"])
      assert.strictEqual(output, "")
      assert.strictEqual(exitCode, 0)
    }), 120_000)

  it.live("typechecks the React page of examples/server as a user's bundler project would (DOM, JSX)", () =>
    Effect.gen(function*() {
      const { exitCode, output } = yield* exec(path.join(root, "node_modules/.bin/tsc"), ["-p", "examples/server/chat-page"])
      assert.deepStrictEqual({ exitCode, output }, { exitCode: 0, output: "" })
    }), 120_000)

  it.live("typechecks the Studio page of packages/server as the browser project it is (DOM, Preact's JSX)", () =>
    Effect.gen(function*() {
      const { exitCode, output } = yield* exec(path.join(root, "node_modules/.bin/tsc"), ["-p", "packages/server/studio"])
      assert.deepStrictEqual({ exitCode, output }, { exitCode: 0, output: "" })
    }), 120_000)
})
