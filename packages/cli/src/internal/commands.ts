/**
 * commands — what `condukt run` and `condukt check` do once their arguments are parsed. `Cli`'s
 * handlers load this module with a dynamic `import()`, so `version`, `--help` and a usage error
 * never load what it needs: the workflow executor, every model provider, MCP, the durable stores
 * and `Condukt.layer`, which each handler provides here (`check` too: it asks the model providers
 * whether an agent step's model has a key, and warns when one has none: a check needs no key).
 *
 * `run` and `check` refuse an invalid workflow alike: the same line (`check failed: …`) and exit 2,
 * `run` before any step. `run --model-script FILE` answers every agent step from a scripted model
 * (`internal/modelScript`), offline.
 *
 * The CLI is a redaction boundary: once a workflow is loaded, every line it prints (errors,
 * progress, `--json` events, the output) goes through one redactor holding every secret value the
 * workflow names (`Secrets.of`: host variables its MCP servers read, literal tokens and client
 * secrets, credential headers), whatever a server echoed into an error.
 */
import { Model, Redactor } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { type Document, Durable, type RunEngine, Secrets, Workflow, WorkflowError, type WorkflowEvent } from "@condukt/workflows"
import { Config, Duration, Effect, Option, Result, Terminal } from "effect"
import * as Approve from "../Approve.ts"
import * as DurableStore from "../DurableStore.ts"
import * as InputArgs from "../InputArgs.ts"
import * as Progress from "../Progress.ts"
import * as ModelScript from "./modelScript.ts"
import { fail, plain, type Printer, printer, reportUnexpected } from "./print.ts"
import * as ProcessIdentity from "./processIdentity.ts"

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

const reportError = (print: Printer) => (error: WorkflowError.WorkflowInvalid | WorkflowError.WorkflowFailed | WorkflowError.DurableFailed) =>
  error._tag === "WorkflowInvalid"
    ? fail(print, 2, `check failed: ${error.message}`)
    : error._tag === "DurableFailed"
    ? fail(print, 1, `Durable run failed: ${error.message}`)
    : fail(print, error.reason === "InvalidInputs" ? 2 : 1, `Workflow run failed: ${error.message}`)

const render = (output: unknown): string | undefined =>
  output === null || output === undefined ? undefined : typeof output === "string" ? output : JSON.stringify(output)

/** Where a durable run is kept, which run it is (`--durable` and `--run-id`), and its lease's duration. */
interface DurableChoice {
  readonly db: string
  readonly runId: Option.Option<string>
  readonly lease: Duration.Duration | undefined
}

/**
 * `CONDUKT_DURABLE_LEASE`: how long, in seconds, a durable run's lease lasts unrenewed (ADR 0081;
 * 60 by default): how long a run whose process was killed stays refused. Tests shorten it.
 */
const LEASE = Config.option(Config.Number("CONDUKT_DURABLE_LEASE"))

/**
 * A durable run of `document` (`Durable.run` on the database `db`): a new run's id is made and,
 * once the run is recorded, printed first on stderr (even with `--quiet`: it is what resumes the
 * run); a given one is resumed, or retried when it failed (its attempt and the steps that run
 * again printed first, as the id is). The run's lease names this process (pid and host).
 */
const runDurable = Effect.fnUntraced(function*(
  print: Printer,
  document: Document.Document,
  file: string,
  durable: DurableChoice,
  options: RunEngine.Options
) {
  const resume = Option.isSome(durable.runId)
  const runId = Option.isSome(durable.runId) ? durable.runId.value : yield* Durable.newRunId
  const location = DurableStore.location(durable.db)
  const onRecorded = print.err(`run ${runId} (durable, in ${location}; resume it with --run-id ${runId})`)
  const onRetried = ({ attempt, steps }: Durable.Retry) =>
    print.err(`run ${runId} (durable, in ${location}): attempt ${attempt}, retrying ${
      steps.length === 0 ? "it (no step failed)" : `its failed step${steps.length === 1 ? "" : "s"} ${steps.join(", ")}`
    }`)
  const holder = ProcessIdentity.current()
  const lease = durable.lease
  return yield* Durable.run(document, { ...options, runId, resume, location, file, onRecorded, onRetried, holder, lease }).pipe(
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
  options: Pick<RunEngine.Options, "model" | "concurrency" | "onEvent" | "approve">,
  durable: Option.Option<DurableChoice>
) {
  yield* warn(print, document, file)
  // What `check` refuses, refused the same way (exit 2) before the run; a missing key is the run's to say.
  yield* Effect.catch(Workflow.verify(document, file, { model: options.model, keys: false }), reportError(print))
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

/** `run`'s arguments and flags, as parsed. */
export interface RunArgs {
  readonly file: string
  readonly input: ReadonlyArray<string>
  readonly json: boolean
  readonly quiet: boolean
  readonly model: Option.Option<string>
  readonly concurrency: Option.Option<number>
  readonly approve: Option.Option<Approve.Mode>
  readonly durable: Option.Option<string>
  readonly runId: Option.Option<string>
  /** A JSON list of scripted replies answering every agent step (`internal/modelScript`). */
  readonly modelScript: Option.Option<string>
}

/** What `run` needs to know about where it runs. */
export interface RunContext {
  /** How progress lines look: marks on a terminal, plain elsewhere. */
  readonly style: Progress.Style
  /** Whether an approval can be asked on stdin. */
  readonly canAsk: boolean
  /** `--verbose`: an unexpected error is printed with its cause and stack. */
  readonly verbose: boolean
}

/** `condukt run`: load the workflow, run it, print its output. */
export const run = Effect.fnUntraced(function*(args: RunArgs, context: RunContext) {
  const { approve, concurrency, durable, file, input, json, model, modelScript, quiet, runId } = args
  if (Option.isSome(runId) && Option.isNone(durable)) return yield* fail(plain, 2, "--run-id needs --durable: the database the run is kept in")
  const seconds = yield* Effect.catchTag(LEASE, "ConfigError", () => Effect.succeed(Option.some(Number.NaN)))
  if (Option.isSome(durable) && Option.isSome(seconds) && !(seconds.value >= 1 && Number.isFinite(seconds.value))) {
    return yield* fail(plain, 2, "CONDUKT_DURABLE_LEASE is how long a durable run's lease lasts: a number of seconds, at least 1")
  }
  const lease = Option.getOrUndefined(Option.map(seconds, Duration.seconds))
  const scripted = Option.isSome(modelScript)
    ? Option.some(yield* Effect.catchTag(ModelScript.load(modelScript.value), "ModelScriptInvalid", (error) => fail(plain, 2, error.message)))
    : Option.none()
  const document = yield* Effect.catch(Workflow.load(file), reportError(plain))
  const print = yield* printerFor(document)
  const onEvent = json
    ? (event: WorkflowEvent.WorkflowEvent) => print.out(Progress.json(event))
    : quiet
    ? undefined
    : (event: WorkflowEvent.WorkflowEvent) => print.err(Progress.line(event, context.style))
  const terminal = yield* Terminal.Terminal
  const ask = context.canAsk ? (question: string) => Effect.andThen(print.err(question), terminal.readLine) : undefined
  const options = {
    // A step naming no model is answered by the script too.
    model: Option.getOrUndefined(Option.orElse(model, () => Option.map(scripted, (service) => service.name))),
    concurrency: Option.getOrUndefined(concurrency),
    onEvent,
    approve: Approve.answerer(Option.getOrUndefined(approve), ask)
  }
  const choice = Option.map(durable, (db) => ({ db, runId, lease }))
  const running = runLoaded(print, document, file, input, json, options, choice)
  yield* reportUnexpected(print, context.verbose)(
    Option.isSome(scripted) ? Effect.provideService(running, Model.Model, scripted.value) : running
  )
}, Effect.provide(Condukt.layer))

/** `condukt check`: load the workflow, print its warnings, verify it. */
export const check = Effect.fnUntraced(function*(file: string, verbose: boolean) {
  const document = yield* Effect.catch(Workflow.load(file), reportError(plain))
  const print = yield* printerFor(document)
  yield* reportUnexpected(print, verbose)(Effect.gen(function*() {
    yield* warn(print, document, file)
    yield* Effect.catch(Workflow.verify(document, file, { keys: false }), reportError(print))
    // A missing key is no error here: the run may have it, or a script (--model-script) instead.
    const missing = yield* Workflow.missingKeys(document, file)
    yield* Effect.forEach(missing, (warning) =>
      print.err(`warning: ${warning.location}: ${warning.description}; run needs it, or --model-script FILE to run offline`), { discard: true })
    yield* print.out(`ok: ${file}`)
  }))
}, Effect.provide(Condukt.layer))
