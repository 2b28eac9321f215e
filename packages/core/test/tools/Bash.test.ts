/**
 * Bash's description, parameters and timeouts, with no sandbox; Bash on the Node host is tested in
 * packages/node/test/core/tools/Bash.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration } from "effect"
import { Bash } from "../../src/tools/Bash.ts"

describe("Bash", () => {
  it("describes itself with its limits and takes command, cwd and timeout", () => {
    assert.strictEqual(Bash.name, "Bash")
    assert.strictEqual(Bash.concurrent, false)
    assert.strictEqual(
      Bash.description,
      "Runs a bash script in the working directory and returns everything it printed, stdout and stderr interleaved, at most 2000 lines and 50KB, then its exit code unless that is 0. Each call gets a new shell, so cd, export and functions are gone by the next call. cwd picks another directory; timeout is in seconds (120 unless given)."
    )
    assert.deepStrictEqual(Bash.parameters, {
      type: "object",
      properties: {
        command: { type: "string", description: "Bash command to execute" },
        cwd: { type: "string", description: "Directory to run the command in (relative to the working directory, or absolute)" },
        timeout: { type: "integer", minimum: 1, maximum: 3600, description: "Timeout in seconds (default 120, at most 3600)" }
      },
      required: ["command"],
      additionalProperties: false
    })
  })

  it("asks the executor for its own timeout argument", () => {
    assert.strictEqual(Bash.timeout, undefined)
    assert.deepStrictEqual(Bash.timeoutOf?.({ command: "true", timeout: 3600 }), Duration.seconds(3600))
  })
})
