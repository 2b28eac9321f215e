/**
 * supportedNode: which Node releases the host package refuses, the sentence it prints, and that its
 * minimum is the one the manifests declare (ours and @effect/platform-node's). The refusal itself,
 * on a real Node 20, is test/pack.test.ts's.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import * as SupportedNode from "../../src/internal/supportedNode.ts"

const root = path.resolve(import.meta.dirname, "../../../..")
const manifest = (file: string) => JSON.parse(fs.readFileSync(file, "utf8"))

describe("supportedNode", () => {
  it("refuses a release older than 22.19 with one sentence naming both", () => {
    assert.strictEqual(SupportedNode.refusal("20.20.2"), "Condukt needs Node.js 22.19 or newer; this is Node.js 20.20.2.")
    assert.strictEqual(SupportedNode.refusal("22.18.0"), "Condukt needs Node.js 22.19 or newer; this is Node.js 22.18.0.")
  })

  it("accepts 22.19 and every later release", () => {
    assert.deepStrictEqual(["22.19.0", "22.23.3", "23.0.0", "24.1.0"].map(SupportedNode.refusal), [undefined, undefined, undefined, undefined])
  })

  it("accepts the Node running the tests", () => {
    assert.isUndefined(SupportedNode.refusal(process.versions.node))
  })

  it("asks for what @condukt/node's engines and @effect/platform-node's say", () => {
    const { major, minor } = SupportedNode.minimum
    assert.strictEqual(manifest(path.join(root, "packages/node/package.json")).engines.node, `>=${major}.${minor}`)
    const platform = createRequire(path.join(root, "packages/node/package.json")).resolve("@effect/platform-node/package.json")
    assert.strictEqual(manifest(platform).engines.node, `>=${major}.${minor}.0`)
  })
})
