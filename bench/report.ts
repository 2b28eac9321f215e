/**
 * Report — the one machine-readable line per measurement a benchmark prints after its own human
 * output, read by bench/run.ts into the summary table:
 * `BENCH {"benchmark":…,"ours":…,"baseline":…,"ratio":…,"goal":…,"met":…}`.
 * Figures are strings with their units, as the table shows them; `ratio` is null without a
 * baseline, `met` null without a goal.
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
