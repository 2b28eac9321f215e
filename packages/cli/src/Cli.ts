/**
 * Cli — the `condukt` commands, compatible with Condukt's engine: `run FILE [--input …] [--json] [--approve all|none]
 * [--durable DB [--run-id ID]]` (a run that survives its process: `Durable`, ADR 0066),
 * `check FILE`, `approvals list|show|approve|deny --store STORE` (a store's approval log),
 * `serve [MODULE] [--workflows DIR [--durable DB]] --token TOKEN=PRINCIPAL` (agents and
 * workflows over HTTP, `@condukt/server`),
 * `version` (and `--version`, the same line). `run --model-script FILE` answers every agent step from a
 * JSON list of scripted replies, offline. `run` prints the output on stdout (a string as it is, null as nothing,
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
 *
 * This module holds the command tree and its parsing only: `run` and `check` load what they need
 * (the workflow executor, the providers, MCP, the durable stores: `internal/commands`) when they
 * start, `approvals` the session stores only (`internal/approvalCommands`), so `version`, `--help`
 * and a usage error answer without loading any of it.
 */
// The modules, not the indexes of `effect` and `effect/cli`, which load every module of theirs.
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as GlobalFlag from "effect/cli/GlobalFlag"
import * as CliOutput from "effect/cli/CliOutput"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { plain, reportUnexpected } from "./internal/print.ts"
import { VERSION } from "./Version.ts"

// `Exit`: the process should exit with `code` (the message is already printed).
export { Exit } from "./internal/print.ts"

/** What the CLI needs to know about its terminal. */
export interface Terminal {
  readonly stderrIsTTY: boolean
  /** Whether stdin is a terminal: an approval can be asked there. */
  readonly stdinIsTTY?: boolean | undefined
}

/**
 * `--verbose`, accepted by every command: an unexpected error is printed with its cause and stack.
 * The reporter reads it from argv too, for an error before a handler runs (building the layers).
 */
const Verbose = GlobalFlag.Setting("verbose")({
  flag: Flag.Boolean("verbose").pipe(Flag.withDescription("Print an unexpected error's cause and stack"), Flag.withDefault(false))
})

const file = Argument.String("file").pipe(Argument.withDescription("The workflow file (.hcl)"))

/** What `run` and `check` do, loaded by their handlers only: `version` and `--help` never pay for it. */
const commands = Effect.promise(() => import("./internal/commands.ts"))

/** What `serve` does, loaded by its handler only: the server, the module, the workflows. */
const serveCommand = Effect.promise(() => import("./internal/serveCommand.ts"))

/** What `approvals` does, loaded by its handlers only: the stores, none of the workflow engine. */
const approvalCommands = Effect.promise(() => import("./internal/approvalCommands.ts"))

const store = Flag.String("store").pipe(
  Flag.withDescription("The store the sessions save to: a SQLite file, the directory of a disk store, or a postgres:// URL")
)
const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON on stdout"), Flag.withDefault(false))
const approvalId = Argument.String("id").pipe(Argument.withDescription("The approval's id (as list prints it)"))

/** Where an answer goes, said in `approve` and `deny`'s help and docs/cli.md alike. */
const RECORDED = "The answer is recorded in the store; the session takes it when it next starts (a program's Approvals service delivers it to a live session at once)."

/** `condukt approvals list|show|approve|deny`: the approval log of a store. */
const approvals = () => {
  const list = Command.make(
    "list",
    {
      store,
      json,
      status: Flag.Literals("status", ["open", "answered", "all"]).pipe(
        Flag.withDescription("open (default): waiting for an answer; answered: the audit; all"),
        Flag.withDefault("open" as const)
      ),
      session: Flag.String("session").pipe(Flag.withDescription("Only this session's"), Flag.optional),
      agent: Flag.String("agent").pipe(Flag.withDescription("Only this agent's, its sub-agents' included (a path: main, main/researcher)"), Flag.optional),
      tool: Flag.String("tool").pipe(Flag.withDescription("Only this tool's"), Flag.optional),
      by: Flag.String("by").pipe(Flag.withDescription("Only those this identity answered"), Flag.optional),
      since: Flag.String("since").pipe(Flag.withDescription("Requested at or after: an ISO time, or a span back from now (30m, 1h, 2d)"), Flag.optional),
      until: Flag.String("until").pipe(Flag.withDescription("Requested before: an ISO time, or a span back from now"), Flag.optional),
      limit: Flag.Int("limit").pipe(Flag.withDescription("Records a page holds: 1 to 1000 (default 100)"), Flag.optional),
      cursor: Flag.String("cursor").pipe(Flag.withDescription("The page after this one: the cursor a previous page printed"), Flag.optional)
    },
    Effect.fn("Cli.approvals.list")(function*(args) {
      const verbose = yield* Verbose
      const { list } = yield* approvalCommands
      yield* list({ ...args, verbose })
    })
  ).pipe(Command.withDescription("List approvals, oldest first, a page at a time"))

  const show = Command.make(
    "show",
    { store, json, id: approvalId },
    Effect.fn("Cli.approvals.show")(function*(args) {
      const verbose = yield* Verbose
      const { show } = yield* approvalCommands
      yield* show({ ...args, verbose })
    })
  ).pipe(Command.withDescription("Print every field of an approval"))

  const answering = (outcome: "approved" | "denied") => ({
    store,
    json,
    id: approvalId,
    by: Flag.String("by").pipe(Flag.withDescription(`Who ${outcome === "approved" ? "approves" : "denies"}: a name, an email (recorded as given)`)),
    reason: Flag.String("reason").pipe(Flag.withDescription("Why (the model reads a denial's reason)"), Flag.optional)
  })
  const answer = (name: "approve" | "deny", outcome: "approved" | "denied") =>
    Command.make(
      name,
      answering(outcome),
      Effect.fn("Cli.approvals.answer")(function*(args) {
        const verbose = yield* Verbose
        const { answer } = yield* approvalCommands
        yield* answer(outcome)({ ...args, verbose })
      })
    ).pipe(Command.withDescription(`${name === "approve" ? "Approve" : "Deny"} an open approval, once. ${RECORDED}`))

  return Command.make("approvals").pipe(
    Command.withDescription("List, show and answer the approvals a store keeps"),
    Command.withSubcommands([list, show, answer("approve", "approved"), answer("deny", "denied")])
  )
}

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
      modelScript: Flag.String("model-script").pipe(
        Flag.withDescription("Answer every agent step from this JSON list of scripted replies, offline and without a key (docs/cli.md)"),
        Flag.optional
      ),
      runId: Flag.String("run-id").pipe(
        Flag.withDescription("With --durable: resume this run (its id is printed when it starts), or retry it from its failed step if it failed, instead of starting one"),
        Flag.optional
      )
    },
    Effect.fn("Cli.run")(function*(args) {
      const verbose = yield* Verbose
      const { run } = yield* commands
      yield* run(args, { style: terminal.stderrIsTTY ? "tty" : "plain", canAsk: terminal.stdinIsTTY === true, verbose })
    })
  ).pipe(Command.withDescription("Run a workflow and print its output"))

  const check = Command.make(
    "check",
    { file },
    Effect.fn("Cli.check")(function*({ file }) {
      const verbose = yield* Verbose
      const { check } = yield* commands
      yield* check(file, verbose)
    })
  ).pipe(Command.withDescription("Check a workflow without running it"))

  const serve = Command.make(
    "serve",
    {
      module: Argument.String("module").pipe(
        Argument.withDescription("A module (.ts, .mts, .js, .mjs) whose exported agents are served by name; its `layer` export, if any, is given to their sessions"),
        Argument.optional
      ),
      workflows: Flag.String("workflows").pipe(
        Flag.withDescription("Serve the .hcl workflows of this directory as runs: POST /workflows/<name>/runs with {\"inputs\": {…}}"),
        Flag.optional
      ),
      durable: Flag.String("durable").pipe(
        Flag.withDescription("With --workflows: keep each run in this database (a SQLite file, or a postgres:// URL), so the runs a stopped server left go on when it starts again"),
        Flag.optional
      ),
      port: Flag.Int("port").pipe(Flag.withDescription("The port to listen on (default 3000; 0: any free port)"), Flag.withDefault(3000)),
      host: Flag.String("host").pipe(Flag.withDescription("The address to listen on (default 127.0.0.1: this machine only)"), Flag.withDefault("127.0.0.1")),
      noStudio: Flag.Boolean("no-studio").pipe(Flag.withDescription("Do not serve the Studio (the page at /studio over the same API)"), Flag.withDefault(false)),
      token: Flag.String("token").pipe(
        Flag.withDescription("A bearer token and the principal its requests come from, as <token>=<principal> (repeat the flag; or CONDUKT_TOKENS, comma-separated)"),
        Flag.atLeast(0)
      )
    },
    Effect.fn("Cli.serve")(function*(args) {
      const verbose = yield* Verbose
      const { serve } = yield* serveCommand
      yield* serve(args, verbose)
    })
  ).pipe(Command.withDescription("Serve a module's agents as sessions, and a directory's workflows as runs, over HTTP (prints the URL)"))

  const version = Command.make("version", {}, () => Console.log(VERSION)).pipe(Command.withDescription("Print the version"))

  return Command.make("condukt").pipe(
    Command.withDescription("Run Condukt HCL workflows"),
    Command.withSubcommands([run, check, serve, approvals(), version]),
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
    // `--version` prints what `version` prints: the version alone.
    Effect.provideService(CliOutput.Presenter, {
      present: (event) => (event._tag === "Version" ? Console.log(event.version) : CliOutput.defaultPresenter.present(event))
    }),
    // What failed outside a loaded workflow's handler (building the layers, say): no secret is known yet.
    reportUnexpected(plain, verboseIn(argv))
  )
