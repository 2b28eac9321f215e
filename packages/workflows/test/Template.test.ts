/** The `${…}` language (Condukt §2.3): values, operators, formatters and each error, as data in and out. */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { Template } from "../src/index.ts"

const scope = {
  inputs: { name: "Ada", n: 3, env: "prod", items: ["a", "b,c", "say \"hi\""], obj: { "a key": 1 }, nothing: null, flag: false },
  steps: { a: { ok: true, stdout: "out\n", exit_code: 0, list: [1, 2, 3] } }
}
const value = (source: string) => Result.getOrThrow(Template.interpolate(source, scope))
const error = (source: string) => Result.match(Template.interpolate(source, scope), { onSuccess: () => "no error", onFailure: (e) => e.message })

describe("Template", () => {
  it("a whole placeholder keeps its value's type; a longer string stringifies each", () => {
    assert.strictEqual(value("${steps.a.ok}"), true)
    assert.strictEqual(value("${inputs.n}"), 3)
    assert.deepStrictEqual(value("${steps.a.list}"), [1, 2, 3])
    assert.strictEqual(value("ok=${steps.a.ok} n=${inputs.n} none=${inputs.nothing} list=${steps.a.list}"), "ok=true n=3 none= list=[1,2,3]")
    assert.strictEqual(value("$${literal}"), "${literal}")
  })

  it("member and index access, negative indexes, null propagation", () => {
    assert.strictEqual(value("${inputs.items[-1]}"), "say \"hi\"")
    assert.strictEqual(value("${inputs.items[0]}"), "a")
    assert.strictEqual(value("${inputs.obj[\"a key\"]}"), 1)
    assert.strictEqual(value("${inputs.nothing.deeper}"), null)
    assert.strictEqual(value("${inputs.nothing[0]}"), null)
  })

  it("comparisons, && || ! with truthiness, unary minus, parentheses, literals", () => {
    assert.strictEqual(value("${inputs.env == \"prod\" && !inputs.flag}"), true)
    assert.strictEqual(value("${inputs.n > 2 || false}"), true)
    assert.strictEqual(value("${inputs.name < \"B\"}"), true)
    assert.strictEqual(value("${-inputs.n}"), -3)
    assert.strictEqual(value("${!(inputs.n >= 3)}"), false)
    assert.strictEqual(value("${\"tab\\there\"}"), "tab\there")
    assert.strictEqual(value("${1.5}"), 1.5)
  })

  it(":json encodes and :csv joins, quoting fields with commas, quotes or newlines", () => {
    assert.strictEqual(value("${inputs.obj:json}"), "{\"a key\":1}")
    assert.strictEqual(value("${inputs.items:csv}"), "a,\"b,c\",\"say \"\"hi\"\"\"")
    assert.strictEqual(value("${steps.a.list:csv}"), "1,2,3")
  })

  it("each error says what was wrong and where", () => {
    assert.strictEqual(error("${inputs.name"), "a placeholder is not closed with } in \"${inputs.name\"")
    assert.strictEqual(error("${\"abc}"), "a string literal is not closed with \" in \"${\\\"abc}\"")
    assert.strictEqual(error("${inputs.name @}"), "unexpected character: \"@\" in \"${inputs.name @}\"")
    assert.strictEqual(error("${inputs.name inputs.n}"), "unexpected text after the expression: \"inputs\" in \"${inputs.name inputs.n}\"")
    assert.strictEqual(error("${inputs.items[0}"), "an index is not closed with ] in \"${inputs.items[0}\"")
    assert.strictEqual(error("${(inputs.n}"), "a parenthesis is not closed with ) in \"${(inputs.n}\"")
    assert.strictEqual(error("${secrets.x}"), "undefined identifier: secrets in \"${secrets.x}\"")
    assert.strictEqual(error("${inputs.missing}"), "no such member: missing in \"${inputs.missing}\"")
    assert.strictEqual(error("${inputs.name.first}"), "member access on a value that is not an object: first in \"${inputs.name.first}\"")
    assert.strictEqual(error("${inputs.items[5]}"), "index out of range: 5 in \"${inputs.items[5]}\"")
    assert.strictEqual(error("${inputs.obj[\"b\"]}"), "no such key: b in \"${inputs.obj[\\\"b\\\"]}\"")
    assert.strictEqual(error("${inputs.items[true]}"), "invalid index: true in \"${inputs.items[true]}\"")
    assert.strictEqual(error("${inputs.n < \"4\"}"), "cannot order these values (only number with number, string with string): 3 < \"4\" in \"${inputs.n < \\\"4\\\"}\"")
    assert.strictEqual(error("${-inputs.name}"), "unary - needs a number: \"Ada\" in \"${-inputs.name}\"")
    assert.strictEqual(error("${inputs.name:csv}"), ":csv needs a list: \"Ada\" in \"${inputs.name:csv}\"")
    assert.strictEqual(error("${inputs.name:yaml}"), "unknown formatter (use :json or :csv): yaml in \"${inputs.name:yaml}\"")
  })

  it("nesting past 256 levels is refused, the source quoted by its start", () => {
    const deep = `\${${"(".repeat(300)}inputs.n${")".repeat(300)}}`
    assert.strictEqual(
      error(deep),
      `the expression nests too deeply: more than 256 levels of parentheses, indexes or ! and - in "\${${"(".repeat(78)}"… (611 characters)`
    )
    assert.strictEqual(value(`\${${"(".repeat(250)}inputs.n${")".repeat(250)}}`), 3)
    assert.isTrue(error(`\${${"!".repeat(5000)}inputs.flag}`).startsWith("the expression nests too deeply"))
  })

  it("references are the steps named as steps.<id> anywhere, sorted and unique", () => {
    assert.deepStrictEqual(Template.references({ a: "${steps.b.x} ${steps.a.y}", when: "${steps.b.ok && inputs.x}", do: ["${steps.c}"] }), ["a", "b", "c"])
  })

  it("root aliases are renamed, member names and strings are not", () => {
    assert.strictEqual(Result.getOrThrow(Template.renameRoots("x ${input.task} ${task.a[\"input\"]}", { input: "inputs", task: "steps" })), "x ${inputs.task} ${steps.a[\"input\"]}")
  })

  it("roots are the root identifiers of every placeholder, sorted and unique", () => {
    assert.deepStrictEqual(Template.roots({ a: "${inputs.x} ${path}", b: ["${steps.a[inputs.i]}", "no placeholder"] }), ["inputs", "path", "steps"])
  })

  it("stepMembers are the members read of steps.<id>, by name or by a string index, in order", () => {
    assert.deepStrictEqual(Template.stepMembers(["${steps.a.stdout.trim}", "${steps.b[\"ok\"] && steps.c[0]}", "${inputs.steps.x}"]), [
      { step: "a", member: "stdout" },
      { step: "b", member: "ok" }
    ])
  })
})
