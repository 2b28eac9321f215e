/**
 * The official client conformance suite (@modelcontextprotocol/conformance) against our client
 * actor (test/conformance/client.ts), offline on loopback. The scenarios we do not pass are listed
 * in docs/mcp.md with the reason; `sse-retry` measures reconnection timing, so it is not asserted.
 */
import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { node } from "./support.ts"

const cli = path.resolve(import.meta.dirname, "../node_modules/@modelcontextprotocol/conformance/dist/index.js")
const client = path.resolve(import.meta.dirname, "conformance/client.ts")

const NOT_PASSED = [
  "auth/client-credentials-jwt",
  "auth/cross-app-access-complete-flow",
  "auth/scope-step-up",
  "sse-retry"
]

it.live("the official client conformance suite passes every scenario but those listed in docs/mcp.md", () =>
  Effect.gen(function*() {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-conformance-"))
    const output = yield* Effect.callback<string>((resume) => {
      execFile(node, [cli, "client", "--command", `${node} ${client}`, "--suite", "all", "--timeout", "90000", "-o", out], { cwd: out, maxBuffer: 64 << 20 }, (_error, stdout) =>
        resume(Effect.succeed(stdout)))
    })
    fs.rmSync(out, { recursive: true, force: true })
    const summary = output.slice(output.indexOf("=== SUITE SUMMARY ==="))
    const scenarios = [...summary.matchAll(/^([✓✗]) (\S+): (\d+) passed, (\d+) failed/gmu)].map(([, mark, name, , failed]) => ({
      name: name!,
      passed: mark === "✓" || (failed === "0" && name !== undefined)
    }))
    assert.strictEqual(scenarios.length, 26)
    const failed = scenarios.filter((s) => !s.passed).map((s) => s.name).filter((name) => name !== "sse-retry")
    assert.deepStrictEqual(failed.sort(), NOT_PASSED.filter((name) => name !== "sse-retry"))
  }), { timeout: 300_000 })
