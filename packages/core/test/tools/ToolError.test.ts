/** ToolError: the tools' one failure, and how a SandboxError becomes one. */
import { assert, describe, it } from "@effect/vitest"
import * as Sandbox from "../../src/Sandbox.ts"
import { fromSandbox, ToolError } from "../../src/tools/ToolError.ts"

const render = fromSandbox((reason) => `Cannot do it: ${reason.message}`)

describe("ToolError", () => {
  it("carries the model's sentence as its message", () => {
    const error = new ToolError({ message: "File not found: a.txt" })
    assert.strictEqual(error._tag, "ToolError")
    assert.strictEqual(error.message, "File not found: a.txt")
  })

  it("words a sandbox failure with the tool's sentence for its reason", () => {
    const error = new Sandbox.SandboxError({ method: "readFile", reason: new Sandbox.NotFound({ path: "/w/a.txt" }) })
    assert.strictEqual(render(error).message, "Cannot do it: File not found: /w/a.txt")
  })

  it("keeps the sandbox's own sentence for a path outside the allowed directories", () => {
    const error = new Sandbox.SandboxError({
      method: "readFile",
      reason: new Sandbox.OutsideAllowedPaths({ path: "/etc/passwd", allowed: ["/w"] })
    })
    assert.strictEqual(render(error).message, "Path /etc/passwd is outside allowed directories")
  })
})
