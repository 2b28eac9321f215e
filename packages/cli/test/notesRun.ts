/**
 * What the agent-step CLI tests share: a directory holding a workflow and the two files its agent
 * reads, and a loopback OpenAI server replaying a recorded run (two Read calls, `FIRST` and
 * `SECOND`, then the answer); the `condukt` binary; util-linux `script` for a pty.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { root } from "../../../test/support/exec.ts"
import * as Loopback from "../../providers/test/loopback.ts"

export const condukt = path.join(root, "node_modules/.bin/condukt")

export const FIRST = "call_DdmO9pD3xa9XTPNJ32zg2hcA"
export const SECOND = "call_8YkQm2VtWc4zRbLn0sJp1TfE"

/** The workflow: one agent step reading both files, with `extra` lines in its block. */
export const notes = (...extra: ReadonlyArray<string>) => `workflow "notes" {
  runtime {
    model = "openai:gpt-4.1-mini"
  }
  agent "notes" {
    tools = ["Read"]
    input = "What do a.txt and b.txt say?"
${extra.map((line) => `    ${line}\n`).join("")}  }
  output = task.notes.output
}
`

/**
 * `workflow` as notes.hcl beside a.txt and b.txt, and a server answering its two model requests
 * (the second with `final`, the recorded answer unless given).
 */
export const setUp = (workflow: string, final: string = Loopback.fixture("openai-final.sse")) =>
  Effect.gen(function*() {
    const dir = yield* Loopback.tempFiles({ "notes.hcl": workflow, "a.txt": "alpha\n", "b.txt": "beta\n" })
    const server = yield* Loopback.start([
      Loopback.sse(Loopback.fixture("openai-tools.sse")),
      Loopback.sse(final)
    ])
    const env = {
      PATH: `${path.join(root, "node_modules/.bin")}:/usr/bin:/bin`,
      HOME: os.tmpdir(),
      OPENAI_API_KEY: "sk-loopback-test",
      OPENAI_BASE_URL: server.url
    }
    return { dir, env, server }
  })

/** Durations vary from run to run: each becomes `<t>`. */
export const untimed = (text: string) => text.replace(/ \d+(\.\d+)?(ms|s)\b/g, " <t>")

/** util-linux `script`, which runs a command on a pty: on Debian and its CI images, not everywhere. */
export const script = ["/usr/bin/script", "/bin/script"].find((file) => fs.existsSync(file))

/** `--json` output's events; `at` and `durationMs` are times: checked to be numbers, then left out. */
export const untimedEvents = (stdout: string): ReadonlyArray<Record<string, unknown>> =>
  stdout.trimEnd().split("\n").map((line) => {
    const { at, durationMs, ...event } = JSON.parse(line)
    if (at !== undefined) assert.isNumber(at)
    if (durationMs !== undefined) assert.isNumber(durationMs)
    return event
  })
