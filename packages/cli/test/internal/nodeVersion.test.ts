import { assert, describe, it } from "@effect/vitest"
import { refusal } from "../../src/internal/nodeVersion.ts"

describe("nodeVersion", () => {
  it("refuses a Node.js older than 22.19 in one sentence naming both versions", () => {
    assert.strictEqual(refusal("20.20.2"), "Condukt needs Node.js 22.19 or newer; this is Node.js 20.20.2.")
    assert.strictEqual(refusal("22.18.0"), "Condukt needs Node.js 22.19 or newer; this is Node.js 22.18.0.")
  })

  it("accepts 22.19 and anything newer", () => {
    for (const version of ["22.19.0", "22.23.3", "23.0.0", "24.11.1"]) assert.isUndefined(refusal(version), version)
  })
})
