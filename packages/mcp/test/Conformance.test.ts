/**
 * The official client conformance suite (@modelcontextprotocol/conformance) against our client
 * actor (test/conformance/client.ts), offline on loopback. The scenarios we do not pass are listed
 * in docs/mcp.md with the reason. `sse-retry` measures a reconnection delay (500 ms asked, 1 s at
 * most), which the suite's parallel scenarios stretch on a loaded machine: it is asserted in a run
 * of its own, tagged timing-sensitive (retried).
 * The suite takes about two minutes on a loaded 2-core machine: each scenario gets 90 s, the whole
 * run 240 s, after which the suite's process group is killed and the test fails saying so. No
 * scenario is run again: one that fails, but for those listed, fails the test. Eleven runs of the
 * suite at load averages 13 to 62 on 2 cores failed only the two listed and, in three of them,
 * `sse-retry` (late); how `sse-retry` went in the parallel run is printed, not counted.
 */
import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { runClientSuite } from "./conformance/cli.ts"

const cli = path.resolve(import.meta.dirname, "../node_modules/@modelcontextprotocol/conformance/dist/index.js")

const SCENARIO_TIMEOUT_MS = 90_000
const SUITE_TIMEOUT_MS = 240_000

const NOT_PASSED = ["auth/2025-03-26-oauth-metadata-backcompat", "auth/cross-app-access-complete-flow"]
/** Asserted alone (below), not among the suite's parallel scenarios. */
const TIMED = "sse-retry"

/** The CLI's output. */
const conformance = (selection: ReadonlyArray<string>) => runClientSuite(cli, selection, SCENARIO_TIMEOUT_MS, (output) => output)

it.live("the official client conformance suite passes every scenario but those listed in docs/mcp.md", () =>
  Effect.gen(function*() {
    const output = yield* conformance(["--suite", "all"]).pipe(
      Effect.timeoutOrElse({
        duration: SUITE_TIMEOUT_MS,
        orElse: () => Effect.die(new Error(`the conformance suite did not finish within ${SUITE_TIMEOUT_MS / 1000} s; its processes were killed`))
      })
    )
    const summary = output.slice(output.indexOf("=== SUITE SUMMARY ==="))
    const scenarios = [...summary.matchAll(/^([✓✗]) (\S+): (\d+) passed, (\d+) failed/gmu)].map(([, mark, name, , failed]) => ({
      name: name!,
      passed: mark === "✓" || (failed === "0" && name !== undefined)
    }))
    assert.strictEqual(scenarios.length, 26)
    const timed = scenarios.find((s) => s.name === TIMED)
    yield* Effect.log(`${TIMED} in the parallel run (not counted: a timing the parallel scenarios stretch; asserted alone below): ${timed === undefined ? "absent" : timed.passed ? "passed" : "failed"}`)
    const failed = scenarios.filter((s) => !s.passed && s.name !== TIMED).map((s) => s.name)
    assert.deepStrictEqual(failed.sort(), NOT_PASSED, output.slice(output.indexOf("=== SUITE SUMMARY ===")))
  }), { timeout: SUITE_TIMEOUT_MS + 30_000 })

it.live("sse-retry, run alone: the client reconnects after the delay the server's retry field asks for", () =>
  Effect.gen(function*() {
    const output = yield* conformance(["--scenario", TIMED])
    assert.isTrue(output.includes("OVERALL: PASSED"), output.slice(output.indexOf("Passed:")))
  }), { timeout: SCENARIO_TIMEOUT_MS, tags: ["timing-sensitive"] })
