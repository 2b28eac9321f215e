/**
 * One run of a conformance suite's CLI against our client (conformance/client.ts): `node <cli>
 * client --command "<node> client.ts" <selection> --timeout <ms> -o <dir>`. `read` makes what it
 * needs of the CLI's output and its results directory, which is removed after. The CLI's process
 * group (the CLI and the clients it spawns) is killed when the fiber is interrupted.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const node = process.execPath
const client = path.resolve(import.meta.dirname, "client.ts")

export const runClientSuite = <A>(
  cli: string,
  selection: ReadonlyArray<string>,
  scenarioTimeoutMs: number,
  read: (output: string, results: string) => A
): Effect.Effect<A> =>
  Effect.callback<A>((resume) => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-conformance-"))
    const args = [cli, "client", "--command", `${node} ${client}`, ...selection, "--timeout", String(scenarioTimeoutMs), "-o", out]
    const child = spawn(node, args, { cwd: out, detached: true, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const collect = (chunk: Buffer) => {
      output += chunk.toString()
    }
    child.stdout.on("data", collect)
    child.stderr.on("data", collect)
    child.on("close", () => {
      const result = read(output, out)
      fs.rmSync(out, { recursive: true, force: true })
      resume(Effect.succeed(result))
    })
    return Effect.sync(() => {
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGKILL")
    })
  })
