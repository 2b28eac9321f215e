/**
 * bench/confine — what confinement costs a command: LocalSandbox `exec("true")` with
 * `confine: true` (one bubblewrap sandbox per sandbox — new namespaces, a read-only root, a fresh
 * /dev, /proc and /tmp — whose launcher starts each command in a cgroup of its own: docs/decisions/0070)
 * against the same sandbox unconfined, and confined without the process limit (no cgroup, so a
 * bwrap per command, as every confined command ran before 0070), interleaved call by call; then
 * 1,000 concurrent calls of each (the process budget runs a few at a time), in rounds, the order
 * alternating. Goals (issue 27): ≤ +15 ms a call; the burst ≤ 1.3× unconfined. bubblewrap comes
 * from scripts/setup-bubblewrap.sh when it is missing. The launchers stop when the scope closes:
 * the child processes are counted after it.
 *
 * Run: node_modules/.bin/node bench/confine.ts
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as Condukt from "../packages/node/src/Condukt.ts"
import * as Sandbox from "../packages/core/src/Sandbox.ts"
import * as LocalSandbox from "../packages/node/src/sandbox/Local.ts"
import { report } from "./report.ts"
import { children, median } from "./support/spawns.ts"

const N = 200
const WARMUP = 20
const BURST = 1000
const ROUNDS = 3

const main = async () => {
  execFileSync("bash", [join(import.meta.dirname, "../scripts/setup-bubblewrap.sh")], { stdio: ["ignore", "ignore", "inherit"] })
  const cwd = mkdtempSync(join(tmpdir(), "condukt-bench-confine-"))
  const scope = Scope.makeUnsafe()
  const sandboxOf = async (confine: LocalSandbox.Options["confine"]) =>
    Context.get(await Effect.runPromise(Layer.buildWithScope(LocalSandbox.layer({ cwd, confine }).pipe(Layer.provide(Condukt.layer)), scope)), Sandbox.Sandbox)
  const open = await sandboxOf(false)
  const confined = await sandboxOf(true)
  // The process limit's share: the same confinement without the cgroup each command joins.
  const unlimited = await sandboxOf({ maxProcesses: false })
  const variants = [
    { name: "exec true", sandbox: open, times: new Array<number>() },
    { name: "exec true, confined", sandbox: confined, times: new Array<number>() },
    { name: "confined, no pids limit", sandbox: unlimited, times: new Array<number>() }
  ]
  for (const { sandbox } of variants) for (let i = 0; i < WARMUP; i++) await Effect.runPromise(sandbox.exec("true"))
  for (let i = 0; i < N; i++) {
    for (const variant of i % 2 === 0 ? variants : [...variants].reverse()) {
      const start = performance.now()
      await Effect.runPromise(variant.sandbox.exec("true"))
      variant.times.push(performance.now() - start)
    }
  }
  const bursts = variants.map(({ name, sandbox }) => ({ name, sandbox, times: new Array<number>() }))
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of round % 2 === 0 ? bursts : [...bursts].reverse()) {
      const start = performance.now()
      await Promise.all(Array.from({ length: BURST }, () => Effect.runPromise(variant.sandbox.exec("true"))))
      variant.times.push(performance.now() - start)
    }
  }
  await Effect.runPromise(Scope.close(scope, Exit.void))
  const left = children().length
  rmSync(cwd, { recursive: true, force: true })
  const [plain, fenced, unfenced] = variants.map(({ times }) => median(times))
  for (const { name, times } of variants) console.log(`${name.padEnd(22)} median ${median(times).toFixed(2)} ms`)
  const [plainBurst, fencedBurst, unfencedBurst] = bursts.map(({ times }) => median(times))
  for (const { name, times } of bursts) console.log(`${BURST} concurrent ${name.padEnd(22)} ${times.map((ms) => ms.toFixed(0)).join(" / ")} ms`)
  console.log(`child processes left after the bursts: ${left}`)
  console.log(
    `without the process limit: +${(unfenced! - plain!).toFixed(2)} ms a call, ${(unfencedBurst! / plainBurst!).toFixed(2)}× the burst ` +
      "(no cgroup, so no launcher: a bwrap per command, whose user and mount namespaces a burst serialises on)"
  )
  report({
    benchmark: "confine: exec true confined − unconfined (median)",
    ours: `${fenced!.toFixed(2)} ms`,
    baseline: `${plain!.toFixed(2)} ms`,
    ratio: fenced! / plain!,
    goal: "≤ +15 ms",
    met: fenced! - plain! <= 15
  })
  report({
    benchmark: `confine: ${BURST} concurrent exec true, confined / unconfined (median)`,
    ours: `${fencedBurst!.toFixed(0)} ms`,
    baseline: `${plainBurst!.toFixed(0)} ms`,
    ratio: fencedBurst! / plainBurst!,
    goal: "≤ 1.3×",
    met: fencedBurst! / plainBurst! <= 1.3
  })
}

await main()
