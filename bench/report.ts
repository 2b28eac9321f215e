/**
 * Report — the one machine-readable line per measurement a benchmark prints after its own human
 * output, read by bench/run.ts into the summary table:
 * `BENCH {"benchmark":…,"ours":…,"baseline":…,"ratio":…,"goal":…,"met":…}`.
 * Figures are strings with their units, as the table shows them; `ratio` is null without a
 * baseline, `met` null without a goal. `summary` turns what every benchmark reported into the
 * table, the missed goals last, and says whether the run failed: a missed goal is a failed run.
 */
import { Schema } from "effect"

export const Report = Schema.Struct({
  benchmark: Schema.String,
  ours: Schema.String,
  baseline: Schema.String,
  ratio: Schema.NullOr(Schema.Number),
  goal: Schema.String,
  met: Schema.NullOr(Schema.Boolean)
})
export type Report = typeof Report.Type

export const prefix = "BENCH "

export const report = (measurement: Report): void => {
  console.log(`${prefix}${JSON.stringify(measurement)}`)
}

/** What one benchmark's process reported, and how it ended. */
export interface Outcome {
  readonly name: string
  readonly exitCode: number
  readonly reports: ReadonlyArray<Report>
}

/**
 * The table of every measurement (benchmark, ours, baseline, ratio, goal), then the benchmarks
 * that failed to run and the goals missed, last, so they are what a reader sees; `failed` when
 * either is there.
 */
export const summary = (outcomes: ReadonlyArray<Outcome>): { readonly table: string; readonly failed: boolean } => {
  const row = (r: Report) => [
    r.benchmark,
    r.ours,
    r.baseline,
    r.ratio === null ? "—" : `${r.ratio.toFixed(2)}×`,
    r.met === null ? r.goal : `${r.goal} ${r.met ? "met" : "MISSED"}`
  ]
  const reports = outcomes.flatMap((outcome) => outcome.reports)
  const broken = outcomes.filter((outcome) => outcome.exitCode !== 0)
  const missed = reports.filter((r) => r.met === false)
  const rows = [
    ...reports.filter((r) => r.met !== false).map(row),
    ...broken.map(({ exitCode, name }) => [`bench/${name}.ts failed (exit code ${exitCode})`, "", "", "", ""]),
    ...missed.map(row)
  ]
  const header = ["benchmark", "ours", "baseline", "ratio", "goal"]
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((cells) => cells[i]!.length)))
  const format = (cells: ReadonlyArray<string>) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`
  const lines = [format(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(format)]
  if (missed.length > 0) lines.push("", `${missed.length} goal${missed.length === 1 ? "" : "s"} missed: ${missed.map((r) => `${r.benchmark} (${r.ratio === null ? r.ours : `${r.ratio.toFixed(2)}×`}, goal ${r.goal})`).join("; ")}`)
  return { table: lines.join("\n"), failed: broken.length > 0 || missed.length > 0 }
}
