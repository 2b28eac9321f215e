/**
 * Processes — assertions about host processes for tests that must prove nothing survived.
 *
 * A killed process may linger as a zombie until its parent (here often a PID 1 that does not
 * reap) collects it; a zombie holds no resources and runs no code, so it counts as dead.
 * Polling is bounded: a survivor fails the test instead of hanging it.
 *
 * Linux's `/proc` is read through Node's `fs`, loaded when a function here is called
 * (`process.getBuiltinModule`) rather than imported: `@condukt/testing` also runs where no Node
 * runs (a browser page or worker, ADR 0094), and a static `node:fs` import would keep a bundler
 * from building it for one.
 */
import { Effect } from "effect"

const fs = () => process.getBuiltinModule("node:fs")

/** The kernel's state letter for `pid` (`R`, `S`, `Z`…), or "gone" once it has been reaped. */
export const state = (pid: number): Effect.Effect<string> =>
  Effect.try(() => fs().readFileSync(`/proc/${pid}/stat`, "utf8")).pipe(
    Effect.map((stat) => stat.charAt(stat.lastIndexOf(")") + 2)),
    Effect.orElseSucceed(() => "gone")
  )

/** @since 0.1.0 @category guards */
export const isDead = (pid: number): Effect.Effect<boolean> =>
  Effect.map(state(pid), (s) => s === "Z" || s === "X" || s === "gone")

/** Fails with the process's state when it is still alive after `attempts` × 10 ms. */
export const awaitDeath = (pid: number, attempts = 200): Effect.Effect<void, string> =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (yield* isDead(pid)) return
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.fail(`process ${pid} is still alive (state ${yield* state(pid)})`)
  })

/**
 * Waits until `file` holds a whole line, then returns it parsed as a number (a pid); polled every
 * 10 ms, for 30 s by default: a program that has just started (a CLI on a loaded machine, its module
 * graph loading) can take over 10 s to reach the command that writes it.
 */
export const awaitPidFile = (file: string, attempts = 3000): Effect.Effect<number, string> =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < attempts; attempt++) {
      const text = fs().existsSync(file) ? fs().readFileSync(file, "utf8") : ""
      if (text.endsWith("\n")) return Number(text)
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.fail(`${file} was never written (${attempts * 10} ms)`)
  })
