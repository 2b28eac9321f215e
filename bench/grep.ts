/**
 * bench/grep — LocalSandbox.grep against ripgrep over the same tree of ≥ 20,000 files.
 *
 * Run: `node_modules/.bin/node bench/grep.ts [pattern]` (default pattern `createContext`).
 * The tree is built once under .bench-tmp/grep-tree (gitignored) from copies of
 * node_modules/.pnpm; `bash bench/setup-ripgrep.sh` installs ripgrep when `rg` is missing.
 *
 * Fairness: ripgrep runs as `rg -u -n --no-heading` — `-u` stops it honouring .gitignore/.ignore
 * files (LocalSandbox has no ignore files), while both skip hidden entries, neither follows
 * symlinks and both skip binary files (LocalSandbox on a NUL in the first 8 KiB, ripgrep on the
 * first NUL it reads, so counts can differ by a match or two in files with a late NUL). Both
 * report matching lines, and ripgrep prints one line per matching line, so counts compare.
 * Each tool gets one warm-up run; then runs alternate and medians are reported. Both are timed from
 * this process, so the ripgrep figure includes spawning it (a few ms).
 */
import { LocalSandbox, Sandbox } from "@condukt/core"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Duration, Effect, FileSystem, Path } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { report } from "./report.ts"

const minimumFiles = 20_000
const runs = 7
const pattern = process.argv[2] ?? "createContext"

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

const shell = (script: string, cwd: string) =>
  Effect.flatMap(ChildProcessSpawner.ChildProcessSpawner, (spawner) =>
    spawner.string(ChildProcess.make("bash", ["-c", script], { cwd }), { includeStderr: true }))

/** Copies node_modules/.pnpm until the tree holds enough regular, non-hidden files. */
const buildTree = Effect.fn("bench.buildTree")(function*(workspace: string, tree: string) {
  const fs = yield* FileSystem.FileSystem
  const ready = `${tree}.ready`
  if (yield* fs.exists(ready)) return
  const countFiles = (dir: string) =>
    Effect.map(shell(`find . \\( -name '.*' -a ! -name . \\) -prune -o -type f -print | wc -l`, dir), Number)
  const perCopy = yield* countFiles(`${workspace}/node_modules/.pnpm`)
  const copies = Math.ceil(minimumFiles / perCopy)
  yield* Console.log(`building ${tree}: ${copies} copies of node_modules/.pnpm (${perCopy} files each)`)
  yield* fs.remove(tree, { recursive: true, force: true })
  yield* fs.makeDirectory(tree, { recursive: true })
  for (let i = 1; i <= copies; i++) {
    yield* shell(`cp -R node_modules/.pnpm '${tree}/copy-${i}'`, workspace)
  }
  yield* fs.writeFileString(ready, "")
})

const program = Effect.gen(function*() {
  const path = yield* Path.Path
  const workspace = path.resolve(import.meta.dirname, "..")
  const tree = path.join(workspace, ".bench-tmp", "grep-tree")
  yield* buildTree(workspace, tree)
  const files = yield* shell(`find . \\( -name '.*' -a ! -name . \\) -prune -o -type f -print | wc -l`, tree)
  yield* Console.log(`tree: ${tree} (${files.trim()} regular non-hidden files)`)
  yield* Console.log(`ripgrep: ${(yield* shell("bash bench/setup-ripgrep.sh", workspace)).trim()}`)

  const sandbox = yield* Effect.provide(
    Effect.gen(function*() {
      return yield* Sandbox.Sandbox
    }),
    LocalSandbox.layer({ cwd: tree })
  )
  const local = Effect.map(
    Effect.timed(sandbox.grep(pattern, { limit: 100_000 })),
    ([elapsed, matches]) => ({ ms: Duration.toMillis(elapsed), count: matches.length })
  )
  const ripgrep = Effect.map(
    Effect.timed(Effect.flatMap(ChildProcessSpawner.ChildProcessSpawner, (spawner) =>
      spawner.string(ChildProcess.make("rg", ["-u", "-n", "--no-heading", "-e", pattern, "."], { cwd: tree })))),
    ([elapsed, output]) => ({ ms: Duration.toMillis(elapsed), count: output.split("\n").filter((l) => l !== "").length })
  )

  yield* local
  yield* ripgrep
  const localRuns: Array<{ ms: number; count: number }> = []
  const ripgrepRuns: Array<{ ms: number; count: number }> = []
  for (let i = 0; i < runs; i++) {
    localRuns.push(yield* local)
    ripgrepRuns.push(yield* ripgrep)
  }
  const localMs = median(localRuns.map((r) => r.ms))
  const ripgrepMs = median(ripgrepRuns.map((r) => r.ms))
  yield* Console.log(`pattern: ${pattern}, ${runs} runs each`)
  yield* Console.log(`LocalSandbox.grep  median ${localMs.toFixed(1)} ms  matches ${localRuns[0]!.count}`)
  yield* Console.log(`rg -u              median ${ripgrepMs.toFixed(1)} ms  matches ${ripgrepRuns[0]!.count}`)
  yield* Console.log(`ratio LocalSandbox / rg: ${(localMs / ripgrepMs).toFixed(2)}x`)
  report({
    benchmark: `grep: LocalSandbox.grep / rg -u, ${files.trim()} files (median)`,
    ours: `${localMs.toFixed(1)} ms`,
    baseline: `${ripgrepMs.toFixed(1)} ms`,
    ratio: localMs / ripgrepMs,
    goal: "none set",
    met: null
  })
})

NodeRuntime.runMain(program.pipe(Effect.provide(NodeServices.layer)))
