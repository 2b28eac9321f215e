/**
 * A script's own `timeout` in the virtual sandbox, on the caller's thread (issue 43 item 2): it ends
 * a CPU-bound loop, which never lets a timer fire, and a command that checkpoints its signal, and the
 * script goes on; GNU's exit statuses and messages. The same on a `WorkerPool`:
 * Timeout.pool.test.ts.
 *
 * No timing is asserted: each sandbox's own deadline is 10 s, so a loop `timeout` did not end
 * would run to it and the call would answer the sandbox's limit instead of printing 124.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as VirtualSandbox from "../src/VirtualSandbox.ts"
import { ran } from "./support.ts"

/** Loops that end only by a timeout; the sandbox's own deadline well beyond the scripts' ones. */
const limits: VirtualSandbox.Limits = { maxCommands: 1_000_000_000, maxLoopIterations: 1_000_000_000, wallTime: "10 seconds" }
const spin = "bash -c 'while true; do :; done'"

/** 90,000 files: a `du` over them takes seconds, checkpointing its signal as it goes. */
const tree = (): Record<string, string> => {
  const files: Record<string, string> = {}
  for (let d = 0; d < 300; d++) for (let f = 0; f < 300; f++) files[`/tree/d${d}/f${f}`] = "x"
  return files
}

describe("timeout in the virtual sandbox", () => {
  it.effect("ends a CPU-bound loop with 124 and the script goes on", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits })
      assert.deepStrictEqual(yield* sandbox.exec(`timeout 0.3 ${spin}; echo $?; echo after`), ran("124\nafter\n"))
      assert.deepStrictEqual(
        yield* sandbox.exec("timeout 0.3 bash -c 'while :; do x=$((x+1)); done'; echo $?"),
        ran("124\n")
      )
    }))

  it.effect("ends each loop of a for loop at its own timeout", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits })
      assert.deepStrictEqual(
        yield* sandbox.exec(`for i in 1 2 3; do timeout 0.1 ${spin}; echo "$i $?"; done`),
        ran("1 124\n2 124\n3 124\n")
      )
    }))

  it.effect("nests: the earlier deadline ends the command, whichever timeout holds it", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits })
      assert.deepStrictEqual(yield* sandbox.exec(`timeout 5 timeout 0.2 ${spin}; echo $?`), ran("124\n"))
      assert.deepStrictEqual(yield* sandbox.exec(`timeout 0.2 timeout 5 ${spin}; echo $?`), ran("124\n"))
      assert.deepStrictEqual(
        yield* sandbox.exec(`timeout 5 bash -c "timeout 0.1 ${spin}; echo inner \\$?"; echo outer $?`),
        ran("inner 124\nouter 0\n")
      )
    }))

  it.effect("ends a command that checkpoints its signal, and one that waits", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits, files: tree() })
      assert.deepStrictEqual(yield* sandbox.exec("timeout 0.1 du -s /tree; echo $?"), ran("124\n"))
      assert.deepStrictEqual(yield* sandbox.exec("timeout 0.1 sleep 5; echo $?"), ran("124\n"))
    }))

  it.effect("a command that finishes first keeps its own status, output and stdin", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits })
      assert.deepStrictEqual(
        yield* sandbox.exec("timeout 5 bash -c 'echo out; echo err >&2; exit 3'; echo $?"),
        ran("out\n3\nerr\n")
      )
      assert.deepStrictEqual(yield* sandbox.exec("echo piped | timeout 5 cat"), ran("piped\n"))
      assert.deepStrictEqual(yield* sandbox.exec("timeout 0 true; echo $?; timeout inf false; echo $?"), ran("0\n1\n"))
      assert.deepStrictEqual(yield* sandbox.exec("timeout 1m printf '%s-' a 'b c'"), ran("a-b c-"))
    }))

  it.effect("says what GNU says when it times out: --preserve-status, KILL, --verbose", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits })
      const statuses = yield* Effect.forEach([
        "timeout --preserve-status 0.1 sleep 5",
        "timeout -s KILL 0.1 sleep 5",
        "timeout --signal=INT --preserve 0.1 sleep 5",
        "timeout -k 1 --foreground 0.1 sleep 5",
        "timeout -s 0 -k 0.1 0.1 sleep 5"
      ], (script) => sandbox.exec(`${script}; echo $?`))
      assert.deepStrictEqual(statuses, [ran("143\n"), ran("137\n"), ran("130\n"), ran("124\n"), ran("137\n")])
      assert.deepStrictEqual(
        yield* sandbox.exec("timeout -v 0.1 sleep 5; echo $?"),
        ran("124\ntimeout: sending signal TERM to command 'sleep'\n")
      )
    }))

  it.effect("refuses bad durations and options with GNU's messages and 125", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits })
      const tryHelp = "Try 'timeout --help' for more information.\n"
      const refused = yield* Effect.forEach([
        "timeout abc true",
        "timeout 1x true",
        "timeout 1s2 true",
        "timeout -- -1 true",
        "timeout nan true",
        "timeout",
        "timeout 1",
        "timeout -k abc 1 true",
        "timeout -s FOO 1 true",
        "timeout -s 65 1 true",
        "timeout -k",
        "timeout --foo 1 true",
        "timeout -x 1 true",
        "timeout --v 1 true",
        "timeout --preserve-status=1 1 true"
      ], (script) => sandbox.exec(`${script}; echo $?`))
      assert.deepStrictEqual(refused, [
        "timeout: invalid time interval 'abc'\n",
        "timeout: invalid time interval '1x'\n",
        "timeout: invalid time interval '1s2'\n",
        "timeout: invalid time interval '-1'\n",
        "timeout: invalid time interval 'nan'\n",
        "",
        "",
        "timeout: invalid time interval 'abc'\n",
        "timeout: 'FOO': invalid signal\n",
        "timeout: '65': invalid signal\n",
        "timeout: option requires an argument -- 'k'\n",
        "timeout: unrecognized option '--foo'\n",
        "timeout: invalid option -- 'x'\n",
        "timeout: option '--v' is ambiguous; possibilities: '--verbose' '--version'\n",
        "timeout: option '--preserve-status' doesn't allow an argument\n"
      ].map((complaint) => ran(`125\n${complaint}${tryHelp}`)))
    }))

  it.effect("accepts GNU's durations, signals and abbreviations", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits })
      const accepted = yield* Effect.forEach(
        ["1.5", ".5", "1.", "0x1p1", "1e1", "1d", "2h", "0.5m", "+1", "infinity", "-0"],
        (duration) => sandbox.exec(`timeout -s sigterm --k=2 -s 9 --sig=HUP -sRTMIN+1 -- ${duration} echo ok`)
      )
      assert.deepStrictEqual(accepted, Array.from({ length: 11 }, () => ran("ok\n")))
    }))

  it.effect("reports a command it cannot find or run as GNU does, and prints its help", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits, files: { "script.txt": "echo hi\n" } })
      assert.deepStrictEqual(
        yield* sandbox.exec("timeout 1 no-such-command; echo $?"),
        ran("127\ntimeout: failed to run command 'no-such-command': No such file or directory\n")
      )
      assert.deepStrictEqual(
        yield* sandbox.exec("timeout 1 ./script.txt; echo $?"),
        ran("126\ntimeout: failed to run command './script.txt': Permission denied\n")
      )
      const help = yield* sandbox.exec("timeout --help")
      assert.deepStrictEqual(
        { exitCode: help.exitCode, first: help.output.split("\n")[0] },
        { exitCode: 0, first: "Usage: timeout [OPTION] DURATION COMMAND [ARG]..." }
      )
    }))
})

describe("the commands a script starts (timeout's, bash -c)", () => {
  it.effect("see the call's env, exported as a process's environment is, and only that call's", () =>
    Effect.gen(function*() {
      const sandbox = yield* VirtualSandbox.make({ limits })
      const env = { GREETING: "hi", OTHER: "x" }
      assert.deepStrictEqual(
        yield* sandbox.exec("bash -c 'echo $GREETING'; timeout 5 bash -c 'echo $OTHER'; printenv GREETING", { env }),
        ran("hi\nx\nhi\n")
      )
      assert.deepStrictEqual(
        yield* sandbox.exec("bash -c 'echo $GREETING'", { env: { GREETING: "again" }, timeout: "5 seconds" }),
        ran("again\n")
      )
      assert.deepStrictEqual(yield* sandbox.exec("LOCAL=1; bash -c 'echo [$GREETING$LOCAL]'"), ran("[]\n"))
      assert.deepStrictEqual(yield* sandbox.exec("export LATER=1; timeout 5 bash -c 'echo $LATER'"), ran("1\n"))
    }))
})
