/**
 * Cli — the `condukt` commands, compatible with Condukt's engine: `run FILE [--input …] [--json] [--approve all|none]
 * [--durable DB [--run-id ID]]` (a run that survives its process: `Durable`, ADR 0066),
 * `check FILE`, `version`. `run` prints the output on stdout (a string as it is, null as nothing,
 * anything else as JSON); progress goes to stderr (marked lines on a TTY, plain lines elsewhere,
 * none with `--quiet`), or every event to stdout as JSON lines with `--json`. Failures are one line
 * on stderr and an exit code: 1 when the run failed, 2 for a usage or validation error (`Exit`).
 * Anything else is unexpected (a bug, an unforeseen failure): its message on stderr, with its cause
 * and stack under `--verbose`, and exit 1, never a silent exit. Ctrl-C interrupts the run, whose
 * scope kills its processes.
 *
 * The CLI is a redaction boundary: once a workflow is loaded, every line it prints (errors,
 * progress, `--json` events, the output) goes through one redactor holding every secret value the
 * workflow names (`Secrets.of`: host variables its MCP servers read, literal tokens and client
 * secrets, credential headers), whatever a server echoed into an error.
 */
import { Redactor } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { type Document, Durable, type Executor, Secrets, Workflow, WorkflowError, type WorkflowEvent } from "@condukt/workflows"
import { Cause, Console, Effect, Option, Result, Schema, Terminal as EffectTerminal } from "effect"
import { Argument, CliError, Command, Flag, GlobalFlag } from "effect/cli"
import * as Approve from "./Approve.ts"
import * as DurableStore from "./DurableStore.ts"
import * as InputArgs from "./InputArgs.ts"
import * as Progress from "./Progress.ts"
import { VERSION } from "./Version.ts"

/**
 * The process should exit with `code` (the message is already printed).
 *
 * @since 0.1.0
 * @category errors
 */
export class Exit extends Schema.TaggedError<Exit>()("Exit", { code: Schema.Int }) {}

/** What the CLI needs to know about its terminal. */
export interface Terminal {
  readonly stderrIsTTY: boolean
  /** Whether stdin is a terminal: an approval can be asked there. */
  readonly stdinIsTTY?: boolean | undefined
}

/** Where the CLI prints: stdout and stderr, each line redacted first. */
interface Printer {
  readonly out: (text: string) => Effect.Effect<void>
  readonly err: (text: string) => Effect.Effect<void>
}

const printer = (redactor: Redactor.Service): Printer => ({
  out: (text) => Console.log(redactor.redact(text)),
  err: (text) => Console.error(redactor.redact(text))
})

/** Before a workflow is loaded no secret is known. */
const plain = printer(Redactor.none)

/**
 * A printer redacting every secret value `document` names; one that cannot be resolved (a
 * variable not set) has no value to hide, and the run reports it where it is used.
 */
const printerFor = (document: Document.Document) =>
  Effect.map(
    Effect.forEach(
      Object.entries(Secrets.of(document)),
      ([name, secret]) => Effect.map(Effect.option(secret.resolve), (value) => Option.map(value, (v) => [name, v] as const)),
      { concurrency: "unbounded" }
    ),
    (resolved) => printer(Redactor.secrets(Object.fromEntries(resolved.flatMap(Option.toArray))))
  )

/** What the workflow holds unused, one `warning:` line each on stderr: `check` and `run` say the same. */
const warn = (print: Printer, document: Document.Document, file: string) =>
  Effect.forEach(Workflow.warnings(document, file), (warning) => print.err(`warning: ${warning.location}: ${warning.description}`), { discard: true })

const fail = (print: Printer, code: number, message: string) => Effect.andThen(print.err(message), Effect.fail(new Exit({ code })))

const reportError = (print: Printer) => (error: WorkflowError.WorkflowInvalid | WorkflowError.WorkflowFailed | WorkflowError.DurableFailed) =>
  error._tag === "WorkflowInvalid"
    ? fail(print, 2, `check failed: ${error.message}`)
    : error._tag === "DurableFailed"
    ? fail(print, 1, `Durable run failed: ${error.message}`)
    : fail(print, error.reason === "InvalidInputs" ? 2 : 1, `Workflow run failed: ${error.message}`)

/**
 * `--verbose`, accepted by every command: an unexpected error is printed with its cause and stack.
 * The reporter reads it from argv too, for an error before a handler runs (building the layers).
 */
const Verbose = GlobalFlag.Setting("verbose")({
  flag: Flag.Boolean("verbose").pipe(Flag.withDescription("Print an unexpected error's cause and stack"), Flag.withDefault(false))
})

/** What an unexpected failure prints: its message (the first error's), and with `verbose` the whole cause, stacks included. */
const unexpected = (cause: Cause.Cause<unknown>, verbose: boolean): string => {
  const errors = Cause.prettyErrors(cause)
  const message = errors.map((error) => error.message === "" ? error.name : error.message).join("; ")
  return verbose
    ? `Unexpected error: ${message}\n${Cause.pretty(cause)}`
    : `Unexpected error: ${message} (run again with --verbose for its cause and stack)`
}

/**
 * `effect` with every unexpected failure printed (redacted by `print`) and turned into exit 1.
 * An `Exit` (its message already printed), a usage error (printed by the parser) and an
 * interruption (Ctrl-C) pass through.
 */
const reportUnexpected = (print: Printer, verbose: boolean) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exit, R> =>
  Effect.catchCause(effect, (cause) => {
    // Interrupted (Ctrl-C): interrupted still, so the teardown exits 130.
    if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
    const error = Cause.findErrorOption(cause)
    if (Option.isSome(error) && error.value instanceof Exit) return Effect.fail(error.value)
    if (Option.isSome(error) && CliError.isCliError(error.value)) return Effect.fail(new Exit({ code: 2 }))
    return fail(print, 1, unexpected(cause, verbose))
  })

const file = Argument.String("file").pipe(Argument.withDescription("The workflow file (.hcl)"))

const render = (output: unknown): string | undefined =>
  output === null || output === undefined ? undefined : typeof output === "string" ? output : JSON.stringify(output)

/** Where a durable run is kept, and which run it is: `--durable` and `--run-id`. */
interface DurableChoice {
  readonly db: string
  readonly runId: Option.Option<string>
}

/**
 * A durable run of `document` (`Durable.run` on the database `db`): a new run's id is made and,
 * once the run is recorded, printed first on stderr (even with `--quiet`: it is what resumes the
 * run); a given one is resumed.
 */
const runDurable = Effect.fnUntraced(function*(
  print: Printer,
  document: Document.Document,
  file: string,
  durable: DurableChoice,
  options: Executor.Options
) {
  const resume = Option.isSome(durable.runId)
  const runId = Option.isSome(durable.runId) ? durable.runId.value : yield* Durable.newRunId
  const location = DurableStore.location(durable.db)
  const onRecorded = print.err(`run ${runId} (durable, in ${location}; resume it with --run-id ${runId})`)
  return yield* Durable.run(document, { ...options, runId, resume, location, file, onRecorded }).pipe(
    Effect.provide(DurableStore.layer(durable.db, runId))
  )
})

/** `run` once the workflow is loaded: its warnings, its inputs, the run, the output. */
const runLoaded = Effect.fnUntraced(function*(
  print: Printer,
  document: Document.Document,
  file: string,
  input: ReadonlyArray<string>,
  json: boolean,
  options: Pick<Executor.Options, "model" | "concurrency" | "onEvent" | "approve">,
  durable: Option.Option<DurableChoice>
) {
  yield* warn(print, document, file)
  const inputs = InputArgs.parse(input, document.inputs ?? {})
  if (Result.isFailure(inputs)) return yield* fail(print, 2, inputs.failure)
  const running = Option.isSome(durable)
    ? runDurable(print, document, file, durable.value, { ...options, inputs: inputs.success })
    : Workflow.run(document, { ...options, inputs: inputs.success })
  const result = yield* Effect.catch(running, reportError(print))
  if (json) return yield* print.out(JSON.stringify({ _tag: "Output", output: result.output }))
  const text = render(result.output)
  if (text !== undefined) yield* print.out(text.endsWith("\n") ? text.slice(0, -1) : text)
})

/** Whether `--verbose` comes before any `--` (after which every word is an operand). */
const verboseIn = (argv: ReadonlyArray<string>) => {
  const end = argv.indexOf("--")
  return (end === -1 ? argv : argv.slice(0, end)).includes("--verbose")
}

/** The root command, its subcommands and their handlers. */
const make = (terminal: Terminal) => {
  const run = Command.make(
    "run",
    {
      file,
      input: Flag.String("input").pipe(
        Flag.withDescription("Inputs: one JSON object, or key=value (repeat the flag)"),
        Flag.atLeast(0)
      ),
      json: Flag.Boolean("json").pipe(Flag.withDescription("Print every event as one JSON line on stdout"), Flag.withDefault(false)),
      quiet: Flag.Boolean("quiet").pipe(Flag.withDescription("Print no progress on stderr (warnings and errors still)"), Flag.withDefault(false)),
      model: Flag.String("model").pipe(Flag.withDescription("The model for agent steps that name none"), Flag.optional),
      concurrency: Flag.Int("concurrency").pipe(Flag.withDescription("Most steps running at once (default 8)"), Flag.optional),
      approve: Flag.Literals("approve", ["all", "none"]).pipe(
        Flag.withDescription("Answer every tool call that waits for approval: all approves, none denies (default: ask on the terminal)"),
        Flag.optional
      ),
      durable: Flag.String("durable").pipe(
        Flag.withDescription("Record each finished step in this database (a SQLite file, or a postgres:// URL), so a killed run can resume"),
        Flag.optional
      ),
      runId: Flag.String("run-id").pipe(
        Flag.withDescription("With --durable: resume this run (its id is printed when it starts) instead of starting one"),
        Flag.optional
      )
    },
    Effect.fn("Cli.run")(function*({ approve, concurrency, durable, file, input, json, model, quiet, runId }) {
      if (Option.isSome(runId) && Option.isNone(durable)) return yield* fail(plain, 2, "--run-id needs --durable: the database the run is kept in")
      const document = yield* Effect.catch(Workflow.load(file), reportError(plain))
      const print = yield* printerFor(document)
      const style: Progress.Style = terminal.stderrIsTTY ? "tty" : "plain"
      const onEvent = json
        ? (event: WorkflowEvent.WorkflowEvent) => print.out(Progress.json(event))
        : quiet
        ? undefined
        : (event: WorkflowEvent.WorkflowEvent) => print.err(Progress.line(event, style))
      const terminal_ = yield* EffectTerminal.Terminal
      const ask = terminal.stdinIsTTY === true ? (question: string) => Effect.andThen(print.err(question), terminal_.readLine) : undefined
      const options = {
        model: Option.getOrUndefined(model),
        concurrency: Option.getOrUndefined(concurrency),
        onEvent,
        approve: Approve.answerer(Option.getOrUndefined(approve), ask)
      }
      const choice = Option.map(durable, (db) => ({ db, runId }))
      yield* reportUnexpected(print, yield* Verbose)(runLoaded(print, document, file, input, json, options, choice))
    })
  ).pipe(Command.withDescription("Run a workflow and print its output"))

  const check = Command.make(
    "check",
    { file },
    Effect.fn("Cli.check")(function*({ file }) {
      const document = yield* Effect.catch(Workflow.load(file), reportError(plain))
      const print = yield* printerFor(document)
      yield* reportUnexpected(print, yield* Verbose)(Effect.gen(function*() {
        yield* warn(print, document, file)
        yield* Effect.catch(Workflow.verify(document, file), reportError(print))
        yield* print.out(`ok: ${file}`)
      }))
    })
  ).pipe(Command.withDescription("Check a workflow without running it"))

  const version = Command.make("version", {}, () => Console.log(VERSION)).pipe(Command.withDescription("Print the version"))

  return Command.make("condukt").pipe(
    Command.withDescription("Run Condukt HCL workflows"),
    Command.withSubcommands([run, check, version]),
    Command.withGlobalFlags([Verbose])
  )
}

/**
 * Runs the CLI on `argv` (without `node` and the script); fails with `Exit` for a non-zero exit,
 * every message printed first.
 *
 * @since 0.1.0
 * @category constructors
 */
export const main = (argv: ReadonlyArray<string>, terminal: Terminal) =>
  Command.runWith(make(terminal), { version: VERSION })(argv).pipe(
    Effect.provide(Condukt.layer),
    // What failed outside a loaded workflow's handler (building the layers, say): no secret is known yet.
    reportUnexpected(plain, verboseIn(argv))
  )
