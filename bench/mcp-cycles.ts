/**
 * bench/mcp-cycles — crash cycles per transport leave nothing behind (issue 29): a session
 * connects to an MCP server declared `restart: "permanent"`, calls its tool, the server is killed
 * (SIGKILL) and comes back (over stdio the session's supervisor starts it again; over Streamable
 * HTTP its process is started again on the same port and the client opens a new session), the
 * tool is called again, the session closes (packages/mcp/test/cycles.ts, which the suite runs 25
 * times per transport). Counted after the cycles: the servers' processes still alive (every pid a
 * call answered, and any process under this one running the server), and this process's file
 * descriptors (/proc/self/fd) against the count after one warm-up cycle. Goal: 0 processes and 0
 * descriptors left, each transport; the time per cycle is printed beside it. 250 cycles per
 * transport by default (issue 29 asked 1,000: give the count): each cycle starts two server
 * processes, ~0.45 s a cycle on a busy 2-core machine, and 1,000 of each kept `pnpm bench` on this
 * benchmark for 15 minutes (issue 43); a leak of one descriptor or process a cycle shows in any count.
 *
 * Run: node_modules/.bin/node bench/mcp-cycles.ts [cycles (250)] [stdio | http (both)]
 */
import { Effect } from "effect"
import * as Cycles from "../packages/mcp/test/cycles.ts"
import { report } from "./report.ts"

const CYCLES = Number(process.argv[2] ?? 250)
const transports: ReadonlyArray<Cycles.Transport> = process.argv[3] === undefined ? ["stdio", "http"] : [process.argv[3] as Cycles.Transport]

for (const transport of transports) {
  const outcome = await Effect.runPromise(Cycles.run(transport, CYCLES))
  const left = outcome.fdsAfter - outcome.fdsBefore
  console.log(
    `${transport}: ${outcome.cycles} cycles in ${(outcome.ms / 1000).toFixed(1)} s (${(outcome.ms / outcome.cycles).toFixed(0)} ms a cycle); ` +
      `processes alive: ${outcome.alive.length === 0 ? "none" : outcome.alive.join(", ")}; file descriptors ${outcome.fdsBefore} before, ${outcome.fdsAfter} after`
  )
  report({
    benchmark: `mcp-cycles: ${outcome.cycles} connect → call → crash → restart → call → close over ${transport}, left behind`,
    ours: `${outcome.alive.length} processes, ${left} fds (${(outcome.ms / outcome.cycles).toFixed(0)} ms a cycle)`,
    baseline: `${outcome.fdsBefore} fds before`,
    ratio: null,
    goal: "0 processes, 0 fds",
    met: outcome.alive.length === 0 && left === 0
  })
}
