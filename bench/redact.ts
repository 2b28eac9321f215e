/**
 * bench/redact — redaction throughput over tool output.
 *
 * 50 MB of log-like tool output (lines with paths, numbers, an occasional email, key-like token or
 * one of the secrets) is redacted by a session's redactor: the exact-match redactor of 20 secrets,
 * then the regex redactor with the default patterns. Baseline, in the same run: a plain loop of
 * `String.replaceAll`, one per secret, on the same text (no patterns). Both run on 1 MB pieces, as
 * tool results arrive; the outputs are checked to hold no secret. Prints MB/s and the ratio.
 *
 * Run: node_modules/.bin/node bench/redact.ts
 */
import { Redactor } from "@condukt/core"
import { Redacted } from "effect"
import { report } from "./report.ts"

const TOTAL_BYTES = 50 * 1024 * 1024
const PIECE_BYTES = 1024 * 1024
const RUNS = 3

const secrets: Record<string, string> = Object.fromEntries(
  Array.from({ length: 20 }, (_, i) => [`SECRET_${i}`, `s3cr3t-${i}-${"x".repeat(8 + i)}-${(i * 7919).toString(36)}`])
)
const values = Object.values(secrets)

let seed = 42
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648

const line = (n: number): string => {
  const r = random()
  if (r < 0.002) return `${n} token=${values[Math.floor(random() * values.length)]} used\n`
  if (r < 0.004) return `${n} contact ada${n}@example.com for access\n`
  if (r < 0.005) return `${n} key sk-proj-${"a".repeat(24)}${n}\n`
  return `${n} /srv/app/src/module${n % 97}/file${n % 13}.ts:${n % 400}: processed ${n * 3} items in ${n % 50}ms\n`
}

const pieces: Array<string> = []
let piece = ""
let size = 0
for (let n = 0; size < TOTAL_BYTES; n++) {
  const l = line(n)
  piece += l
  size += l.length
  if (piece.length >= PIECE_BYTES) {
    pieces.push(piece)
    piece = ""
  }
}
if (piece !== "") pieces.push(piece)
const megabytes = size / (1024 * 1024)

const ours = Redactor.compose(
  Redactor.secrets(Object.fromEntries(Object.entries(secrets).map(([k, v]) => [k, Redacted.make(v)]))),
  Redactor.regex()
)
const baseline = (text: string): string => {
  let out = text
  for (const [name, value] of Object.entries(secrets)) out = out.replaceAll(value, `[REDACTED:${name}]`)
  return out
}

const time = (redact: (text: string) => string): number => {
  const outs: Array<string> = []
  const start = performance.now()
  for (const p of pieces) outs.push(redact(p))
  const elapsed = performance.now() - start
  if (outs.some((out) => values.some((v) => out.includes(v)))) throw new Error("a secret survived redaction")
  return elapsed
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
time(ours.redact)
time(baseline)
const oursMs = median(Array.from({ length: RUNS }, () => time(ours.redact)))
const baseMs = median(Array.from({ length: RUNS }, () => time(baseline)))
const mbps = (ms: number) => megabytes / (ms / 1000)
console.log(`${megabytes.toFixed(1)} MB of tool output, 20 secrets, ${RUNS} runs (median)`)
console.log(`secrets + default patterns: ${oursMs.toFixed(0)} ms, ${mbps(oursMs).toFixed(1)} MB/s`)
console.log(`replaceAll loop (baseline): ${baseMs.toFixed(0)} ms, ${mbps(baseMs).toFixed(1)} MB/s`)
console.log(`ratio ${(oursMs / baseMs).toFixed(2)}x`)
report({
  benchmark: "redact: 20 secrets + default patterns / replaceAll loop, 50 MB",
  ours: `${mbps(oursMs).toFixed(1)} MB/s`,
  baseline: `${mbps(baseMs).toFixed(1)} MB/s`,
  ratio: oursMs / baseMs,
  goal: "none set (report)",
  met: null
})
