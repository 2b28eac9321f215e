/**
 * serveCommand — what `condukt serve` does once its arguments are parsed (`Cli`'s handler loads
 * this module with a dynamic `import()`): the agents a module exports (`ServeModule`) and the HCL
 * workflows of a directory (`ServedWorkflows`, durable with `--durable`) served over HTTP by
 * `@condukt/server` until the process is stopped, its URL printed on stdout, then the Studio's
 * (`/studio`, the page over the same API; not served with `--no-studio`).
 *
 * Bad input is refused before anything is served, one sentence on stderr and exit 2: no module
 * and no directory, a module that cannot be served, a directory with no workflow or a workflow
 * that does not check, no token, a malformed token, a port that cannot be listened on.
 */
import { Redactor } from "@condukt/core"
import type * as Sessions from "@condukt/core/Sessions"
import { Condukt } from "@condukt/node"
import { Auth, Server, Studio, WorkflowRuns } from "@condukt/server"
import { type Document, Secrets, Workflow, WorkflowError } from "@condukt/workflows"
import { Config, Context, Duration, Effect, FileSystem, Layer, Option, Path } from "effect"
import { SqlClient } from "effect/sql"
import * as DurableStore from "../DurableStore.ts"
import * as ServedWorkflows from "../ServedWorkflows.ts"
import * as ServeModule from "../ServeModule.ts"
import { fail, plain, reportUnexpected } from "./print.ts"

/** Most workflow files a directory may hold. */
export const MAX_WORKFLOWS = 256

/** The shortest token accepted: a bearer token is a secret, not a password to remember. */
export const MIN_TOKEN_LENGTH = 16

/** `serve`'s arguments and flags, as parsed. */
export interface ServeArgs {
  readonly module: Option.Option<string>
  readonly workflows: Option.Option<string>
  readonly durable: Option.Option<string>
  readonly port: number
  readonly host: string
  /** `--no-studio`: the Studio is not served. */
  readonly noStudio: boolean
  readonly token: ReadonlyArray<string>
}

/** `CONDUKT_TOKENS`: tokens as `--token` takes them, separated by commas. */
const TOKENS = Config.option(Config.String("CONDUKT_TOKENS"))

/** `CONDUKT_DURABLE_LEASE`, as `condukt run --durable` reads it. */
const LEASE = Config.option(Config.Number("CONDUKT_DURABLE_LEASE"))

/** `token=principal` pairs to the tokens' principals, or why not. */
export const parseTokens = (pairs: ReadonlyArray<string>): { readonly tokens: Record<string, string> } | { readonly error: string } => {
  const tokens: Record<string, string> = {}
  for (const pair of pairs) {
    const at = pair.indexOf("=")
    const token = at < 0 ? pair : pair.slice(0, at)
    const principal = at < 0 ? "" : pair.slice(at + 1)
    if (principal === "") return { error: "a token is given as <token>=<principal> (the principal: who the token's requests come from)" }
    if (token.length < MIN_TOKEN_LENGTH) return { error: `a token must have at least ${MIN_TOKEN_LENGTH} characters (the one for ${principal} has ${token.length})` }
    if (Object.hasOwn(tokens, token)) return { error: `a token is given twice (for ${tokens[token]} and ${principal})` }
    tokens[token] = principal
  }
  return { tokens }
}

/** The redactor of the secret values `document` names (those that cannot be resolved have none). */
const redactorFor = (document: Document.Document) =>
  Effect.map(
    Effect.forEach(
      Object.entries(Secrets.of(document)),
      ([name, secret]) => Effect.map(Effect.option(secret.resolve), (value) => Option.map(value, (v) => [name, v] as const)),
      { concurrency: "unbounded" }
    ),
    (resolved) => Redactor.secrets(Object.fromEntries(resolved.flatMap(Option.toArray)))
  )

/** The `.hcl` workflows of `dir`, each loaded and checked as `condukt check` does, or exit 2. */
const loadWorkflows = Effect.fnUntraced(function*(dir: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const names = yield* Effect.catch(fs.readDirectory(dir), (error) => fail(plain, 2, `cannot read the workflows directory ${dir}: ${error.message}`))
  const files = names.filter((name) => name.endsWith(".hcl")).sort()
  if (files.length === 0) return yield* fail(plain, 2, `no workflow in ${dir}: --workflows serves the .hcl files of a directory`)
  if (files.length > MAX_WORKFLOWS) return yield* fail(plain, 2, `${dir} holds ${files.length} workflows, more than the ${MAX_WORKFLOWS} one server serves`)
  const served: Array<ServedWorkflows.Served> = []
  for (const name of files) {
    const file = path.join(dir, name)
    const invalid = (error: WorkflowError.WorkflowInvalid) => fail(plain, 2, `check failed: ${error.message}`)
    const document = yield* Effect.catch(Workflow.load(file), invalid)
    const redactor = yield* redactorFor(document)
    for (const warning of Workflow.warnings(document, file)) yield* plain.err(redactor.redact(`warning: ${warning.location}: ${warning.description}`))
    yield* Effect.catch(Workflow.verify(document, file), (error) => fail(plain, 2, redactor.redact(`check failed: ${error.message}`)))
    const twin = served.find((other) => other.document.name === document.name)
    if (twin !== undefined) return yield* fail(plain, 2, `${twin.file} and ${file} are both workflow ${JSON.stringify(document.name)}: a served workflow's name must be its own`)
    served.push({ file, document, redact: redactor.redact })
  }
  return served
})

const list = (names: ReadonlyArray<string>) => names.map((name) => JSON.stringify(name)).join(", ")

/** `condukt serve`: load what is served, listen, print the URL, serve until stopped. */
export const serve = Effect.fnUntraced(function*(args: ServeArgs, verbose: boolean) {
  if (Option.isNone(args.module) && Option.isNone(args.workflows)) {
    return yield* fail(plain, 2, "condukt serve needs a module whose agents it serves, or --workflows <dir>, or both")
  }
  if (Option.isSome(args.durable) && Option.isNone(args.workflows)) {
    return yield* fail(plain, 2, "--durable keeps the runs of --workflows: give the workflows directory too")
  }
  if (!Number.isInteger(args.port) || args.port < 0 || args.port > 65535) return yield* fail(plain, 2, "--port is a port number: 0 to 65535 (0: any free port)")
  const env = yield* Effect.catchTag(TOKENS, "ConfigError", () => Effect.succeed(Option.none<string>()))
  const pairs = args.token.length > 0 ? args.token : Option.match(env, { onNone: () => [], onSome: (text) => text.split(",").map((pair) => pair.trim()).filter((pair) => pair !== "") })
  if (pairs.length === 0) {
    return yield* fail(plain, 2, "condukt serve needs at least one --token <token>=<principal> (or CONDUKT_TOKENS=<token>=<principal>,…): no request is served without one")
  }
  const parsed = parseTokens(pairs)
  if ("error" in parsed) return yield* fail(plain, 2, parsed.error)
  const seconds = yield* Effect.catchTag(LEASE, "ConfigError", () => Effect.succeed(Option.some(Number.NaN)))
  if (Option.isSome(args.durable) && Option.isSome(seconds) && !(seconds.value >= 1 && Number.isFinite(seconds.value))) {
    return yield* fail(plain, 2, "CONDUKT_DURABLE_LEASE is how long a durable run's lease lasts: a number of seconds, at least 1")
  }
  const lease = Option.getOrUndefined(Option.map(seconds, Duration.seconds))

  const loaded = Option.isNone(args.module) ? undefined : yield* Effect.catch(ServeModule.load(args.module.value), (error) => fail(plain, 2, error.message))
  const workflows = Option.isNone(args.workflows) ? [] : yield* loadWorkflows(args.workflows.value)

  yield* reportUnexpected(plain, verbose)(Effect.gen(function*() {
    // What the sessions are given: the module's layer over the CLI's defaults.
    const services = yield* Effect.catch(
      Layer.build((loaded?.layer ?? Layer.empty).pipe(Layer.provideMerge(Condukt.layer))),
      (error) => fail(plain, 2, `cannot serve ${Option.getOrElse(args.module, () => "")}: building its layer failed: ${error instanceof Error ? error.message : String(error)}`)
    )
    const durableRuns = (db: string) =>
      Effect.gen(function*() {
        const client = yield* Effect.catch(Layer.build(DurableStore.layer(db, "serve")), (error) => fail(plain, 2, `cannot serve durable runs: ${error.message}`))
        return yield* ServedWorkflows.make({ workflows, durable: { db, lease, sql: Context.get(client, SqlClient.SqlClient) } })
      })
    const runs = Option.isNone(args.workflows)
      ? undefined
      : yield* (Option.isSome(args.durable) ? durableRuns(args.durable.value) : ServedWorkflows.make({ workflows })).pipe(
        Effect.catchTag("WorkflowRunsError", (error) => fail(plain, 2, `cannot serve durable runs: ${error.message}`)),
        Effect.provide(services)
      )
    const agents = (loaded?.agents ?? {}) as Sessions.Agents<never>
    const names = Object.keys(agents)
    const routes = Server.layer({ agents, auth: Auth.bearer(parsed.tokens), defaultAgent: loaded?.defaultAgent, studio: !args.noStudio })
    const listening = yield* Server.listen(routes, { port: args.port, host: args.host }).pipe(
      Effect.provide(services),
      runs === undefined ? (effect) => effect : Effect.provideService(WorkflowRuns.WorkflowRuns, runs),
      Effect.catchTag("ListenError", (error) => fail(plain, 2, `cannot serve on ${args.host}:${args.port}: ${error.description}`))
    )
    const serving = [
      ...(names.length === 0 ? [] : [`agent${names.length === 1 ? "" : "s"} ${list(names)}`]),
      ...(workflows.length === 0 ? [] : [`workflow${workflows.length === 1 ? "" : "s"} ${list(workflows.map((served) => served.document.name))}${
        Option.isSome(args.durable) ? ` (durable, in ${DurableStore.location(args.durable.value)})` : ""
      }`])
    ]
    const studio = args.noStudio ? "" : `, the Studio at ${listening.url}${Studio.PATH}`
    yield* plain.err(`serving ${serving.join(" and ")} at ${listening.url}${studio} (Ctrl-C stops it)`)
    yield* plain.out(listening.url)
    return yield* Effect.never
  }))
}, Effect.scoped, Effect.provide(Condukt.layer))
