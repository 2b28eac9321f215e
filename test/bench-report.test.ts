/**
 * bench/report's summary: what `pnpm bench` prints last and whether it fails (issue 22, item 5).
 */
import { assert, describe, it } from "@effect/vitest"
import { summary } from "../bench/report.ts"

const measured = (benchmark: string, ratio: number, met: boolean | null) => ({
  benchmark,
  ours: `${ratio * 10} µs`,
  baseline: "10 µs",
  ratio,
  goal: met === null ? "none set (report)" : "≤ 0.5×",
  met
})

describe("bench summary", () => {
  it("puts the missed goals last, names each with its figure, and fails the run", () => {
    const { failed, table } = summary([
      { name: "turns", exitCode: 0, reports: [measured("turns", 0.79, false), measured("sessions", 0.4, true)] },
      { name: "redact", exitCode: 0, reports: [measured("redact", 0.84, null)] }
    ])
    assert.isTrue(failed)
    assert.strictEqual(table, [
      "| benchmark | ours   | baseline | ratio | goal              |",
      "|-----------|--------|----------|-------|-------------------|",
      "| sessions  | 4 µs   | 10 µs    | 0.40× | ≤ 0.5× met        |",
      "| redact    | 8.4 µs | 10 µs    | 0.84× | none set (report) |",
      "| turns     | 7.9 µs | 10 µs    | 0.79× | ≤ 0.5× MISSED     |",
      "",
      "1 goal missed: turns (0.79×, goal ≤ 0.5×)"
    ].join("\n"))
  })

  it("fails when a benchmark could not run, and passes when every goal is met", () => {
    assert.isTrue(summary([{ name: "grep", exitCode: 1, reports: [] }]).failed)
    assert.include(summary([{ name: "grep", exitCode: 1, reports: [] }]).table, "| bench/grep.ts failed (exit code 1) |")
    assert.isFalse(summary([{ name: "turns", exitCode: 0, reports: [measured("turns", 0.3, true)] }]).failed)
  })
})
