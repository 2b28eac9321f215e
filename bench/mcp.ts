/**
 * bench/mcp — `tools/call` round trips over stdio through our MCP client vs the raw SDK `Client`.
 *
 * One `@modelcontextprotocol/server-everything` process (stdio) per client, its `echo` tool:
 * 1,000 sequential calls, then 1,000 concurrent ones, through our client actor (the `Tool` an
 * `McpServer.stdio` gives a session: `McpClient.call` over our process-group transport, with its
 * timeout, span and down-race) and through the raw SDK `Client` over the SDK's
 * `StdioClientTransport`, interleaved in the same run (5 rounds after a warm-up, median). Both use
 * the same SDK copy. Goal: ours ≤ 1.1× raw, each.
 *
 * Run: node_modules/.bin/node bench/mcp.ts
 */
import { Effect, Exit, Scope } from "effect"
import * as path from "node:path"
import { McpServer } from "../packages/mcp/src/index.ts"
import { VirtualSandbox } from "../packages/sandbox-virtual/src/index.ts"
import { ToolCall } from "../packages/testing/src/index.ts"
// The raw SDK from @condukt/mcp's own dependencies: the very copy our client runs on.
import { Client } from "../packages/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js"
import { StdioClientTransport } from "../packages/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js"
import { report } from "./report.ts"

const CALLS = 1_000
const ROUNDS = 5
const GOAL = 1.1

const everything = path.resolve(import.meta.dirname, "../packages/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
const expected = (i: number) => `Echo: m${i}`

// Ours: the tool a session would get, called as the session's executor calls it.
const scope = Effect.runSync(Scope.make())
const tools = await Effect.runPromise(
  McpServer.startAll([McpServer.stdio({ name: "everything", command: process.execPath, args: [everything, "stdio"] })]).pipe(
    Effect.flatten,
    Scope.provide(scope)
  )
)
const echo = tools.find((tool) => tool.name === "everything.echo")!
const sandbox = await Effect.runPromise(VirtualSandbox.make())
const context = ToolCall.context(sandbox)
const oursOne = (i: number) =>
  Effect.flatMap(echo.call({ message: `m${i}` }, context), (output) =>
    output === expected(i) ? Effect.void : Effect.die(new Error(`unexpected echo: ${String(output)}`)))
const ours = {
  sequential: () => Effect.runPromise(Effect.forEach(Array.from({ length: CALLS }, (_, i) => i), oursOne, { discard: true })),
  concurrent: () =>
    Effect.runPromise(Effect.forEach(Array.from({ length: CALLS }, (_, i) => i), oursOne, { discard: true, concurrency: "unbounded" }))
}

// Raw: the SDK's client and stdio transport.
const client = new Client({ name: "bench", version: "0.0.0" })
await client.connect(new StdioClientTransport({ command: process.execPath, args: [everything, "stdio"], stderr: "ignore" }))
const rawOne = async (i: number) => {
  const result = await client.callTool({ name: "echo", arguments: { message: `m${i}` } })
  const text = (result.content as Array<{ type: string; text?: string }>)[0]?.text
  if (text !== expected(i)) throw new Error(`unexpected echo: ${text}`)
}
const raw = {
  sequential: async () => {
    for (let i = 0; i < CALLS; i++) await rawOne(i)
  },
  concurrent: async () => {
    await Promise.all(Array.from({ length: CALLS }, (_, i) => rawOne(i)))
  }
}

const time = async (run: () => Promise<void>) => {
  const start = performance.now()
  await run()
  return performance.now() - start
}
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const modes = ["sequential", "concurrent"] as const
const times = { ours: { sequential: [] as Array<number>, concurrent: [] as Array<number> }, raw: { sequential: [] as Array<number>, concurrent: [] as Array<number> } }
for (const mode of modes) {
  await time(ours[mode])
  await time(raw[mode])
}
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of modes) {
    // Alternate which goes first, so neither always runs on a machine the other just warmed.
    if (round % 2 === 0) {
      times.ours[mode].push(await time(ours[mode]))
      times.raw[mode].push(await time(raw[mode]))
    } else {
      times.raw[mode].push(await time(raw[mode]))
      times.ours[mode].push(await time(ours[mode]))
    }
  }
}

await client.close()
await Effect.runPromise(Scope.close(scope, Exit.void))

console.log(`server-everything over stdio, echo, ${CALLS} calls per run, ${ROUNDS} rounds (median)`)
for (const mode of modes) {
  const oursMs = median(times.ours[mode])
  const rawMs = median(times.raw[mode])
  const ratio = oursMs / rawMs
  const perCall = (ms: number) => `${((ms * 1000) / CALLS).toFixed(0)} µs/call`
  console.log(`${mode}: ours ${oursMs.toFixed(0)} ms (${perCall(oursMs)}), raw SDK ${rawMs.toFixed(0)} ms (${perCall(rawMs)}), ratio ${ratio.toFixed(2)}x`)
  report({
    benchmark: `mcp: ${CALLS} ${mode} tools/call over stdio, our client / raw SDK Client`,
    ours: `${oursMs.toFixed(0)} ms`,
    baseline: `${rawMs.toFixed(0)} ms`,
    ratio,
    goal: `≤ ${GOAL}×`,
    met: ratio <= GOAL
  })
}
