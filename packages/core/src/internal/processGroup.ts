/**
 * processGroup — runs one executable as the leader of its own process group and guarantees that
 * the whole group (grandchildren included) is dead when the Effect ends: on exit, on timeout and
 * on interruption. This is the one module allowed to call node:child_process and process.kill.
 *
 * CONTRACT (implementation pending — see the helper brief):
 */
import type { Effect } from "effect"

export interface RunOptions {
  readonly file: string
  readonly args: ReadonlyArray<string>
  /** Absolute working directory. */
  readonly cwd: string
  /** The complete environment of the child (nothing is inherited implicitly). */
  readonly env: Readonly<Record<string, string>>
  /** Kill the group and fail with `TimedOut` after this many milliseconds. */
  readonly timeoutMs?: number | undefined
  /** Stop collecting output after this many bytes (default 10 MiB); `truncated` is then true. */
  readonly maxOutputBytes?: number | undefined
}

export interface RunResult {
  /** stdout and stderr interleaved as written (UTF-8, invalid bytes replaced). */
  readonly output: string
  readonly exitCode: number
  readonly truncated: boolean
  readonly pid: number
}

export type RunError =
  | { readonly _tag: "SpawnFailed"; readonly description: string }
  | { readonly _tag: "TimedOut"; readonly timeoutMs: number; readonly output: string }

export declare const run: (options: RunOptions) => Effect.Effect<RunResult, RunError>

/** The host variables a child sees by default, plus TERM=dumb PAGER=cat GIT_PAGER=cat. */
export declare const baseEnv: () => Record<string, string>
