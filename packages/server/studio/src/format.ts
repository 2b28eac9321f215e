/**
 * format — how the Studio writes numbers, times and values: tokens with separators, cost in
 * dollars, times in the reader's locale, durations short, and JSON pretty but bounded (a tool's
 * input can be megabytes; the page shows a cut, saying so).
 */
import type { Usage } from "./types.ts"

/** The most characters of a value the page shows. */
export const MAX_SHOWN_CHARS = 20_000

export const tokens = (usage: Usage): number => usage.inputTokens + usage.outputTokens

// Made once: a formatter is slow to build, and a table formats every cell it scrolls past.
const COUNT = new Intl.NumberFormat("en-US")
const TIME = new Intl.DateTimeFormat("en-US", { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false })

export const count = (value: number): string => COUNT.format(value)

export const cost = (value: number | undefined): string =>
  value === undefined ? "—" : `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`

export const time = (epochMs: number): string => TIME.format(epochMs)

export const duration = (ms: number): string =>
  ms < 1000 ? `${Math.round(ms)} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`

/** `text` cut to `max` characters, saying how much was left out. */
export const bounded = (text: string, max = MAX_SHOWN_CHARS): string =>
  text.length <= max ? text : `${text.slice(0, max)}\n… (${count(text.length - max)} more characters)`

/** A value as pretty JSON (a string as itself), bounded. */
export const json = (value: unknown, max = MAX_SHOWN_CHARS): string => {
  if (typeof value === "string") return bounded(value, max)
  try {
    return bounded(JSON.stringify(value, null, 2) ?? String(value), max)
  } catch {
    return "(not JSON)"
  }
}
