/**
 * Cli — the `condukt` commands, compatible with Condukt's engine: `run FILE [--input …] [--json]`,
 * `check FILE`, `version`. `run` prints the output on stdout (a string as it is, null as nothing,
 * anything else as JSON); progress goes to stderr on a TTY, or every event to stdout as JSON lines
 * with `--json`. Failures are one line on stderr and an exit code: 1 when the run failed, 2 for a
 * usage or validation error (`Exit`). Ctrl-C interrupts the run, whose scope kills its processes.
 *
 * The CLI is a redaction boundary: once a workflow is loaded, every line it prints (errors,
 * progress, `--json` events, the output) goes through one redactor holding every secret value the
 * workflow names (`Secrets.of`: host variables its MCP servers read, literal tokens and client
 * secrets, credential headers), whatever a server echoed into an error.
 */
import { Redactor } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { type Document, Secrets, Workflow, WorkflowError, type WorkflowEvent } from "@condukt/workflows"
import { Console, Effect, Option, Result, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
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

const reportError = (print: Printer) => (error: WorkflowError.WorkflowInvalid | WorkflowError.WorkflowFailed) =>
  error._tag === "WorkflowInvalid"
    ? fail(print, 2, `check failed: ${error.message}`)
    : fail(print, error.reason === "InvalidInputs" ? 2 : 1, `Workflow run failed: ${error.message}`)

const file = Argument.String("file").pipe(Argument.withDescription("The workflow file (.hcl)"))

const render = (output: unknown): string | undefined =>
  output === null || output === undefined ? undefined : typeof output === "string" ? output : JSON.stringify(output)

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
      model: Flag.String("model").pipe(Flag.withDescription("The model for agent steps that name none"), Flag.optional),
      concurrency: Flag.Int("concurrency").pipe(Flag.withDescription("Most steps running at once (default 8)"), Flag.optional)
    },
    Effect.fn("Cli.run")(function*({ concurrency, file, input, json, model }) {
      const document = yield* Effect.catch(Workflow.load(file), reportError(plain))
      const print = yield* printerFor(document)
      yield* warn(print, document, file)
      const inputs = InputArgs.parse(input, document.inputs ?? {})
      if (Result.isFailure(inputs)) return yield* fail(print, 2, inputs.failure)
      const onEvent = json
        ? (event: WorkflowEvent.WorkflowEvent) => print.out(Progress.json(event))
        : terminal.stderrIsTTY
        ? (event: WorkflowEvent.WorkflowEvent) => print.err(Progress.line(event))
        : undefined
      const result = yield* Effect.catch(
        Workflow.run(document, {
          inputs: inputs.success,
          model: Option.getOrUndefined(model),
          concurrency: Option.getOrUndefined(concurrency),
          onEvent
        }),
        reportError(print)
      )
      if (json) return yield* print.out(JSON.stringify({ _tag: "Output", output: result.output }))
      const text = render(result.output)
      if (text !== undefined) yield* print.out(text.endsWith("\n") ? text.slice(0, -1) : text)
    })
  ).pipe(Command.withDescription("Run a workflow and print its output"))

  const check = Command.make(
    "check",
    { file },
    Effect.fn("Cli.check")(function*({ file }) {
      const document = yield* Effect.catch(Workflow.load(file), reportError(plain))
      const print = yield* printerFor(document)
      yield* warn(print, document, file)
      yield* Effect.catch(Workflow.verify(document, file), reportError(print))
      yield* print.out(`ok: ${file}`)
    })
  ).pipe(Command.withDescription("Check a workflow without running it"))

  const version = Command.make("version", {}, () => Console.log(VERSION)).pipe(Command.withDescription("Print the version"))

  return Command.make("condukt").pipe(
    Command.withDescription("Run Condukt HCL workflows"),
    Command.withSubcommands([run, check, version])
  )
}

/**
 * Runs the CLI on `argv` (without `node` and the script); fails with `Exit` for a non-zero exit.
 *
 * @since 0.1.0
 * @category constructors
 */
export const main = (argv: ReadonlyArray<string>, terminal: Terminal) =>
  Command.runWith(make(terminal), { version: VERSION })(argv).pipe(
    Effect.catchTag("Exit", Effect.fail),
    Effect.catch((error) => (error._tag === "Exit" ? Effect.fail(error) : Effect.fail(new Exit({ code: 2 })))),
    Effect.provide(Condukt.layer)
  )
