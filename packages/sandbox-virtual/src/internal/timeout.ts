/**
 * timeout — the virtual shell's `timeout`, replacing just-bash's, whose deadline is a timer: a
 * script that computes (`timeout 1 bash -c 'while true; do :; done'`) never yields to the event
 * loop, so the timer never fires and the loop runs to the sandbox's own deadline.
 *
 * Here the deadline is also read off the clock, synchronously, wherever the interpreter reads its
 * signal. The command runs the way just-bash's does: `exec` with a signal of its own (`own`, a
 * real `AbortController`'s). just-bash cannot take a signal whose `aborted` is a clock read: its
 * `exec` combines the caller's signal with the one given into a fresh `AbortController`
 * (`combineAbortSignals`), and the sub-script's statements read that combined signal, which only
 * an `abort` event on ours can abort. So the clock is read where just-bash does read a signal of
 * ours: the signal of the whole `exec`, which `shell.ts` and the pool's worker give `watch`. That
 * signal is the one just-bash's execution budget checks before every statement, command and bit of
 * output, in every nested interpreter alike (one budget per `exec`): its `aborted` getter first
 * runs `poll`, which aborts each `timeout` whose deadline has passed. The abort event reaches the
 * combined signal at once, and the sub-script stops at its next statement, its commands seeing
 * their signals aborted, as when just-bash's own timer fires. A timer ends it too, for a command
 * that waits (`sleep`, a file on another thread) rather than computes.
 *
 * What never reaches a statement, a command or a checkpoint of its signal (one `sed` over 10 MB)
 * is not ended by `timeout`: it runs to its end on the caller's thread, and on a `WorkerPool` the
 * sandbox's own deadline ends the whole `exec` by terminating the worker (a `timeout` cannot use
 * that: the script would not go on). As with just-bash's own `timeout`, a command of the ended
 * script that has not settled 25 ms after the abort (`maxExtensionCleanupTimeMs`) makes just-bash
 * end the whole `exec`; none seen so far (loops of file reads on a pool). The command's output is what just-bash keeps of an aborted script:
 * nothing, here as with just-bash's own `timeout` (3.4.2).
 *
 * GNU coreutils' behaviour for what a sandbox can do: DURATION with an `s`/`m`/`h`/`d` suffix (0
 * or infinity: no deadline), `-k`/`--kill-after`, `-s`/`--signal` (a name or a number, checked),
 * `--preserve-status`, `--foreground`, `-v`/`--verbose`, `--help`; long options abbreviated;
 * 124 on timeout, 128+signal with `--preserve-status`, 137 for KILL, 125 for its own errors with
 * GNU's messages, 126/127 for a command that cannot be run or found. A script cannot catch a
 * signal here: it always ends at the first one, so `--kill-after` only matters with `-s 0`.
 */
import { type ByteString, defineCommand, type ExecResult } from "just-bash"

// Captured when loaded: defense in depth patches globals while a command runs.
const now = Date.now
const setTimer = globalThis.setTimeout.bind(globalThis)
const clearTimer = globalThis.clearTimeout.bind(globalThis)
const nativeAborted = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!

interface Running {
  readonly deadline: number
  readonly own: AbortController
}

/** The `timeout`s running on this thread, each until its command ends or its deadline passes. */
const running = new Set<Running>()
let earliest = Number.POSITIVE_INFINITY

const end = (entry: Running): void => {
  if (running.delete(entry)) entry.own.abort()
}

/**
 * Aborts every running `timeout` whose deadline has passed. Cheap when none runs (a size check),
 * one clock read otherwise: it is called before every statement of every script.
 *
 * @since 0.1.0
 * @category deadlines
 */
export const poll = (): void => {
  if (running.size === 0) return
  const at = now()
  if (at < earliest) return
  const passed: Array<Running> = []
  earliest = Number.POSITIVE_INFINITY
  for (const entry of running) {
    if (entry.deadline <= at) passed.push(entry)
    else earliest = Math.min(earliest, entry.deadline)
  }
  // Aborting runs just-bash's listeners, which may read a signal and so come back here: the
  // passed ones are taken out first.
  for (const entry of passed) end(entry)
}

/**
 * `signal`, its `aborted` now also running `poll`: give it to just-bash as the whole `exec`'s
 * signal, so every statement of every script checks the `timeout`s it runs under.
 *
 * @since 0.1.0
 * @category deadlines
 */
export const watch = (signal: AbortSignal): AbortSignal =>
  Object.defineProperty(signal, "aborted", {
    configurable: true,
    get: () => {
      poll()
      return nativeAborted.call(signal) as boolean
    }
  })

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

interface Parsed {
  readonly durationMs: number
  readonly killAfterMs: number
  readonly signal: Signal
  readonly preserveStatus: boolean
  readonly verbose: boolean
  readonly command: ReadonlyArray<string>
}

interface Signal {
  readonly name: string
  readonly number: number
}

const tryHelp = "Try 'timeout --help' for more information.\n"

const units: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
/** C's `strtod` forms: decimal, hexadecimal (with a binary exponent), infinity; then a unit. */
const decimal = /^[ \t\n\v\f\r]*([+-]?\d+\.?\d*(?:[eE][+-]?\d+)?|[+-]?\.\d+(?:[eE][+-]?\d+)?)([smhd]?)$/
const hexadecimal = /^[ \t\n\v\f\r]*\+?0[xX]([0-9a-fA-F]*)\.?([0-9a-fA-F]*)(?:[pP]([+-]?\d+))?([smhd]?)$/
const infinite = /^[ \t\n\v\f\r]*\+?inf(?:inity)?([smhd]?)$/i

/** Milliseconds, `Infinity` for none, or `undefined` when GNU would refuse it. */
const durationOf = (text: string): number | undefined => {
  if (text.length > 64) return undefined
  const asDecimal = decimal.exec(text)
  // A negative one is refused, but -0 is 0 for GNU too.
  if (asDecimal !== null) return Number(asDecimal[1]) < 0 ? undefined : Number(asDecimal[1]) * units[asDecimal[2] || "s"]!
  const asHex = hexadecimal.exec(text)
  if (asHex !== null && (asHex[1] !== "" || asHex[2] !== "")) {
    const [, whole = "", fraction = "", exponent = "0", unit = ""] = asHex
    const mantissa = Number.parseInt(`${whole}${fraction}` || "0", 16) / 16 ** fraction.length
    return mantissa * 2 ** Number(exponent) * units[unit || "s"]!
  }
  const asInfinite = infinite.exec(text)
  return asInfinite !== null ? Number.POSITIVE_INFINITY : undefined
}

const signalNames: ReadonlyArray<readonly [string, number]> = [
  ["HUP", 1], ["INT", 2], ["QUIT", 3], ["ILL", 4], ["TRAP", 5], ["ABRT", 6], ["IOT", 6], ["BUS", 7],
  ["FPE", 8], ["KILL", 9], ["USR1", 10], ["SEGV", 11], ["USR2", 12], ["PIPE", 13], ["ALRM", 14],
  ["TERM", 15], ["STKFLT", 16], ["CHLD", 17], ["CLD", 17], ["CONT", 18], ["STOP", 19], ["TSTP", 20],
  ["TTIN", 21], ["TTOU", 22], ["URG", 23], ["XCPU", 24], ["XFSZ", 25], ["VTALRM", 26], ["PROF", 27],
  ["WINCH", 28], ["IO", 29], ["POLL", 29], ["PWR", 30], ["SYS", 31]
]
const byName = new Map(signalNames)
const nameOf = new Map(signalNames.map(([name, number]) => [number, name] as const).reverse())
const realtime = /^RTM(IN|AX)(?:([+-])(\d{1,2}))?$/

const signalOf = (text: string): Signal | undefined => {
  if (/^\d{1,3}$/.test(text)) {
    const number = Number(text)
    return number <= 64 ? { name: nameOf.get(number) ?? String(number), number } : undefined
  }
  const name = text.toUpperCase().replace(/^SIG/, "")
  const known = byName.get(name)
  if (known !== undefined) return { name, number: known }
  const rt = realtime.exec(name)
  if (rt === null) return undefined
  const offset = Number(rt[3] ?? 0) * (rt[2] === "-" ? -1 : 1)
  const number = (rt[1] === "IN" ? 34 : 64) + offset
  return number >= 34 && number <= 64 ? { name, number } : undefined
}

const longOptions = ["preserve-status", "foreground", "kill-after", "signal", "verbose", "help", "version"] as const
type LongOption = (typeof longOptions)[number]
const takesValue = (option: LongOption) => option === "kill-after" || option === "signal"

/** The long option `name` abbreviates, or GNU's complaint. */
const longOption = (given: string): LongOption | string => {
  const name = given.slice(2).split("=")[0]!
  const exact = longOptions.find((option) => option === name)
  if (exact !== undefined) return exact
  const matches = longOptions.filter((option) => option.startsWith(name))
  if (matches.length === 1) return matches[0]!
  if (matches.length === 0) return `timeout: unrecognized option '${given}'\n`
  return `timeout: option '--${name}' is ambiguous; possibilities:${matches.map((m) => ` '--${m}'`).join("")}\n`
}

/** What to run, `help`/`version`, or GNU's complaint (exit 125). */
const parse = (args: ReadonlyArray<string>): Parsed | "help" | "version" | { readonly complaint: string } => {
  let killAfterMs = 0
  let signal: Signal = { name: "TERM", number: 15 }
  let preserveStatus = false
  let verbose = false
  let at = 0
  const refuse = (complaint: string) => ({ complaint: complaint + tryHelp })
  /** Takes an option's value as GNU does, when it meets it; a complaint when it is refused. */
  const take = (option: "k" | "s", value: string): string | undefined => {
    if (option === "k") {
      const ms = durationOf(value)
      if (ms === undefined) return `timeout: invalid time interval '${value}'\n`
      killAfterMs = ms
    } else {
      const named = signalOf(value)
      if (named === undefined) return `timeout: '${value}': invalid signal\n`
      signal = named
    }
    return undefined
  }
  for (; at < args.length; at++) {
    const arg = args[at]!
    if (arg === "--") {
      at++
      break
    }
    if (arg.startsWith("--")) {
      const option = longOption(arg)
      if (!longOptions.includes(option as LongOption)) return refuse(option)
      const long = option as LongOption
      const inline = arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : undefined
      if (!takesValue(long) && inline !== undefined) return refuse(`timeout: option '--${long}' doesn't allow an argument\n`)
      if (long === "help" || long === "version") return long
      if (long === "preserve-status") preserveStatus = true
      else if (long === "verbose") verbose = true
      else if (long === "kill-after" || long === "signal") {
        const value = inline ?? args[++at]
        if (value === undefined) return refuse(`timeout: option '--${long}' requires an argument\n`)
        const refused = take(long === "kill-after" ? "k" : "s", value)
        if (refused !== undefined) return refuse(refused)
      }
      continue
    }
    if (!arg.startsWith("-") || arg === "-") break
    for (let letter = 1; letter < arg.length; letter++) {
      const flag = arg[letter]!
      if (flag === "v") verbose = true
      else if (flag === "k" || flag === "s") {
        const value = letter + 1 < arg.length ? arg.slice(letter + 1) : args[++at]
        if (value === undefined) return refuse(`timeout: option requires an argument -- '${flag}'\n`)
        const refused = take(flag, value)
        if (refused !== undefined) return refuse(refused)
        break
      } else return refuse(`timeout: invalid option -- '${flag}'\n`)
    }
  }
  const operands = args.slice(at)
  if (operands.length < 2) return refuse("")
  const durationMs = durationOf(operands[0]!)
  if (durationMs === undefined) return refuse(`timeout: invalid time interval '${operands[0]}'\n`)
  return { durationMs, killAfterMs, signal, preserveStatus, verbose, command: operands.slice(1) }
}

const help = `Usage: timeout [OPTION] DURATION COMMAND [ARG]...
  or:  timeout [OPTION]
Start COMMAND, and kill it if still running after DURATION.

Mandatory arguments to long options are mandatory for short options too.
      --preserve-status
                 exit with the same status as COMMAND, even when the
                   command times out
      --foreground
                 accepted; the sandbox has no TTY
  -k, --kill-after=DURATION
                 also send a KILL signal if COMMAND is still running
                   this long after the initial signal was sent
  -s, --signal=SIGNAL
                 specify the signal to be sent on timeout;
                   SIGNAL may be a name like 'HUP' or a number
  -v, --verbose  diagnose to stderr any signal sent upon timeout
      --help     display this help and exit
      --version  output version information and exit

DURATION is a floating point number with an optional suffix:
's' for seconds (the default), 'm' for minutes, 'h' for hours or 'd' for days.
A duration of 0 disables the associated timeout.

In this sandbox a command cannot catch a signal: it ends at the first one sent.

Exit status:
  124  if COMMAND times out, and --preserve-status is not specified
  125  if the timeout command itself fails
  126  if COMMAND is found but cannot be invoked
  127  if COMMAND cannot be found
  137  if COMMAND is sent the KILL (9) signal (128+9)
  -    the exit status of COMMAND otherwise
`

// ---------------------------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------------------------

/**
 * The latin1 string a `ByteString` is, forwarded unchanged as just-bash's own `timeout` does
 * (its `latin1FromBytes`, a passthrough, is missing from just-bash's browser build).
 */
const latin1FromBytes = (bytes: ByteString): string => bytes as unknown as string
const quote = (word: string) => `'${word.replace(/'/g, "'\\''")}'`
/** Timers beyond this fire at once; such a deadline is left to the clock reads alone. */
const longestTimerMs = 2_147_483_647
const aborted = /^bash: execution aborted\n$/m

/** just-bash's "bash: NAME: command not found" (127) or "…: Permission denied" (126), GNU's way. */
const cannotRun = (name: string, result: ExecResult): ExecResult => {
  const reason = result.exitCode === 127 && (result.stderr === `bash: ${name}: command not found\n` ||
      result.stderr === `bash: ${name}: No such file or directory\n`)
    ? "No such file or directory"
    : result.exitCode === 126 && result.stderr === `bash: ${name}: Permission denied\n`
    ? "Permission denied"
    : undefined
  return reason === undefined
    ? result
    : { stdout: result.stdout, stderr: `timeout: failed to run command '${name}': ${reason}\n`, exitCode: result.exitCode }
}

/**
 * The `timeout` command for just-bash's `customCommands`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const command = defineCommand("timeout", async (args, context): Promise<ExecResult> => {
  const parsed = parse(args)
  if (parsed === "help") return { stdout: help, stderr: "", exitCode: 0 }
  if (parsed === "version") return { stdout: "timeout (Condukt virtual sandbox)\n", stderr: "", exitCode: 0 }
  if ("complaint" in parsed) return { stdout: "", stderr: parsed.complaint, exitCode: 125 }
  if (context.exec === undefined) return { stdout: "", stderr: "timeout: exec not available\n", exitCode: 125 }
  const { command: [name, ...rest], durationMs, killAfterMs, preserveStatus, signal, verbose } = parsed
  const started = now()
  // Signal 0 ends nothing; only a KILL `--kill-after` it does.
  const endsAfterMs = signal.number !== 0 ? durationMs : killAfterMs > 0 ? durationMs + killAfterMs : 0
  const endedBy = signal.number !== 0 ? signal : { name: "KILL", number: 9 }
  const ends = endsAfterMs > 0 && endsAfterMs < Number.POSITIVE_INFINITY
  const own = new AbortController()
  const entry: Running = { deadline: started + endsAfterMs, own }
  let timer: ReturnType<typeof setTimer> | undefined
  if (ends) {
    running.add(entry)
    earliest = Math.min(earliest, entry.deadline)
    if (endsAfterMs <= longestTimerMs) timer = setTimer(() => end(entry), endsAfterMs)
  }
  try {
    const result = await context.exec(quote(name!), {
      cwd: context.cwd,
      // What the script exported, as a child process's environment (just-bash's `exec` would
      // start from the interpreter's first environment).
      env: { ...context.exportedEnv },
      stdin: latin1FromBytes(context.stdin),
      stdinKind: "bytes",
      args: rest,
      ...(ends ? { signal: own.signal } : {})
    })
    if (!own.signal.aborted) {
      const timedOut = durationMs > 0 && now() - started >= durationMs && !preserveStatus
      return timedOut ? { stdout: result.stdout, stderr: result.stderr, exitCode: 124 } : cannotRun(name!, result)
    }
    const exitCode = endedBy.number === 9 ? 137 : preserveStatus ? 128 + endedBy.number : 124
    const told = verbose ? `timeout: sending signal ${endedBy.name} to command '${name}'\n` : ""
    return { stdout: result.stdout, stderr: result.stderr.replace(aborted, "") + told, exitCode }
  } finally {
    running.delete(entry)
    if (timer !== undefined) clearTimer(timer)
  }
})
