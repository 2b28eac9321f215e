/**
 * Command's name, description and parameters, with no process; Command on host processes and on a
 * scripted runner is tested in packages/node/test/core/tools/Command.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration } from "effect"
import { Command } from "../../src/tools/Command.ts"

describe("Command", () => {
  it("names the tool after the command's basename in PascalCase", () => {
    assert.strictEqual(Command({ command: "git" }).name, "Git")
    assert.strictEqual(Command({ command: "gh" }).name, "Gh")
    assert.strictEqual(Command({ command: "/usr/bin/git-lfs" }).name, "GitLfs")
    assert.strictEqual(Command({ command: "git", name: "Repo", description: "Our repository" }).name, "Repo")
    assert.strictEqual(Command({ command: "git", description: "Our repository" }).description, "Our repository")
  })

  it("describes the command and says arguments bypass the shell", () => {
    assert.strictEqual(
      Command({ command: "git" }).description,
      "Runs git itself, with no shell in between: every element of args reaches it unchanged, so quotes, globs, " +
        "pipes, redirections and $(...) mean nothing special. Returns what it printed, stdout and stderr interleaved, " +
        "at most 2000 lines and 50KB, then its exit code unless that is 0. cwd picks another directory; " +
        "timeout is in seconds (120 unless given)."
    )
  })

  it("declares its parameters as a closed object with nothing required, and runs alone", () => {
    const tool = Command({ command: "git" })
    assert.deepStrictEqual(tool.parameters, {
      type: "object",
      properties: {
        args: {
          type: "array",
          items: { type: "string" },
          description: "Arguments, one per element, passed as-is (no shell)"
        },
        cwd: { type: "string", description: "Directory to run in, inside the working directory (relative to it, or absolute)" },
        timeout: {
          type: "integer",
          minimum: 1,
          maximum: 3600,
          description: "Timeout in seconds (default 120, at most 3600)"
        }
      },
      additionalProperties: false
    })
    assert.isFalse(tool.concurrent)
  })

  it("asks the executor for its timeout argument, 120 seconds by default", () => {
    const tool = Command({ command: "git" })
    assert.strictEqual(tool.timeout, undefined)
    assert.deepStrictEqual(tool.timeoutOf?.({ timeout: 3600 }), Duration.seconds(3600))
    assert.deepStrictEqual(tool.timeoutOf?.({}), Duration.seconds(120))
  })
})
