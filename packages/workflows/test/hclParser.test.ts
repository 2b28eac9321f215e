import { assert, describe, it } from "@effect/vitest"
import * as HclParser from "../src/internal/hclParser.ts"

describe("hclParser", () => {
  it("answers calls made together before the parser has started, each with its own result", async () => {
    const sources = Array.from({ length: 20 }, (_, i) => `value = ${i}\n`)
    const answers = await Promise.all(sources.map((source, i) => HclParser.call("parse", `f${i}.hcl`, source)))
    assert.deepStrictEqual(answers.map((text) => JSON.parse(text)), sources.map((_, i) => ({ value: i })))
  })

  it("gives an expression's syntax tree", async () => {
    const tree = JSON.parse(await HclParser.call("getExpressionAst", "expression.hcl", "\"a ${b}\""))
    assert.strictEqual(tree.type, "template")
  })

  it("fails a call with the parser's diagnostic and goes on answering", async () => {
    const error = await HclParser.call("parse", "broken.hcl", "a = {\n").then(() => undefined, (e: unknown) => e)
    assert.instanceOf(error, Error)
    assert.match((error as Error).message, /broken\.hcl:2,1/)
    assert.deepStrictEqual(JSON.parse(await HclParser.call("parse", "after.hcl", "a = 1\n")), { a: 1 })
  })

  it("keeps working beside the package's own bridge, each with its own program", async () => {
    const own = await import("@cdktn/hcl2json")
    const [theirs, ours] = await Promise.all([own.parse("theirs.hcl", "x = \"theirs\"\n"), HclParser.call("parse", "ours.hcl", "x = \"ours\"\n")])
    assert.deepStrictEqual([theirs, JSON.parse(ours)], [{ x: "theirs" }, { x: "ours" }])
    assert.deepStrictEqual(JSON.parse(await HclParser.call("parse", "again.hcl", "y = 2\n")), { y: 2 })
  })
})
