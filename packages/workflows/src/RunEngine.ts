/**
 * RunEngine — runs a validated document as one Effect: inputs checked, the graph built (unknown
 * dependencies and cycles refused before anything starts), the sandbox and MCP servers opened in
 * the run's scope, then every step as soon as its dependencies are done. Independent steps run in
 * parallel, at most `concurrency` leaf steps (cmd, agent, http, tool) at once; a `map` runs its
 * items `concurrency` at a time (its own, else the run's). Slots are keyed by step id, so the
 * output never depends on which step finished first. A skipped dependency skips its dependents;
 * the first real error fails the run and interrupts the steps still running (their process
 * groups are killed by the sandbox); servers and sandbox close with the scope, on failure too.
 */
import { Approval, Executor as ToolExecutor, Model, Sandbox, Tool, Tools } from "@condukt/core"
import { Clock, Context, Deferred, Effect, type FileSystem, Layer, Option, type Path, Result, Semaphore } from "effect"
import type { ProcessBudget } from "@condukt/core"
import { MCP_TEMPLATED } from "./Document.ts"
import type * as Document from "./Document.ts"
import * as Expression from "./Expression.ts"
import * as Graph from "./Graph.ts"
import * as Inputs from "./Inputs.ts"
import * as RunSandbox from "./internal/runSandbox.ts"
import type { RunJournal } from "./RunJournal.ts"
import * as Outputs from "./Outputs.ts"
import { McpServers, validate as validateServers } from "./McpServers.ts"
import * as Agent from "./steps/Agent.ts"
import * as Cmd from "./steps/Cmd.ts"
import * as Http from "./steps/Http.ts"
import type { StepContext } from "./steps/StepContext.ts"
import * as ToolStep from "./steps/ToolStep.ts"
import * as Template from "./Template.ts"
import { WorkflowFailed } from "./WorkflowError.ts"
import * as WorkflowEvent from "./WorkflowEvent.ts"

/** Leaf steps running at once unless the caller says otherwise. */
export const DEFAULT_CONCURRENCY = 8

/** @since 0.1.0 @category models */
export interface Options {
  readonly inputs?: Readonly<Record<string, unknown>> | undefined
  /** Most leaf steps at once (default `DEFAULT_CONCURRENCY`); also a map's default. */
  readonly concurrency?: number | undefined
  /** Overrides the runtime block's model. */
  readonly model?: string | undefined
  /** Overrides the runtime block's sandbox: `"local"`, `"virtual"` or a layer. */
  readonly sandbox?: "local" | "virtual" | Layer.Layer<Sandbox.Sandbox, Sandbox.SandboxError> | undefined
  /**
   * The virtual sandbox the run builds (`"virtual"`, here or in the runtime block): `workers`, the
   * most commands running at once on worker threads of the run's own, which end with the run
   * (default: `concurrency`, at most 16), or a `WorkerPool` of the caller's to share (a server's),
   * or `false` to run them on the run's thread, where a CPU-bound command stops the event loop
   * until it ends; `limits`, just-bash's (the output limit is the cmd steps' `max_output_bytes`).
   * See docs/decisions/0100.
   */
  readonly virtual?: VirtualOptions | undefined
  /** Overrides the runtime block's cwd. */
  readonly cwd?: string | undefined
  /** Tools by name; they win over built-ins and MCP tools of the same name. */
  readonly tools?: ReadonlyArray<Tool.Tool> | undefined
  /** Receives every event as it happens. */
  readonly onEvent?: ((event: WorkflowEvent.WorkflowEvent) => Effect.Effect<void>) | undefined
  /**
   * Answers the tool calls of agent steps that wait for approval (the step's `approvals` rules, a
   * tool's `needsApproval`); a request's `agent` is the step's id. Without it such a call fails its
   * step at once (`Approval.nobody`).
   */
  readonly approve?: Approval.Answerer | undefined
  /**
   * Records leaf steps so a run started again (same run, new process) does not repeat the ones
   * that finished (`Durable.run` gives one); their `StepFinished` then says `resumed`.
   */
  readonly journal?: RunJournal | undefined
}

/**
 * A run's virtual sandbox: `workers` of the run's own pool (1–16), `false` for none, or a pool to
 * share that the run does not close; `limits`, just-bash's but the output limit.
 *
 * @since 0.2.0
 * @category models
 */
export type VirtualOptions = RunSandbox.VirtualOptions

/** @since 0.1.0 @category models */
export interface RunResult {
  /** The interpolated `output` (null when the workflow declares none). */
  readonly output: Expression.Value
  /** Every step's output, null for a skipped one. */
  readonly steps: Readonly<Record<string, Expression.Value>>
  /** Skipped steps, sorted. */
  readonly skipped: ReadonlyArray<string>
}

interface Slot {
  readonly skipped: boolean
  readonly value: Expression.Value
}

type Scope = Readonly<Record<string, Expression.Value>>

const BUILT_INS: ReadonlyArray<Tool.Tool> = Tools.coding

/** Every step of a document, the inner steps of maps included. */
const allSteps = (steps: ReadonlyArray<Document.Step>): ReadonlyArray<Document.Step> =>
  steps.flatMap((step) => (step.kind === "map" ? [step, ...allSteps([step.do])] : [step]))

/** What the run's sandbox collects per command: the largest `max_output_bytes` of its cmd steps. */
const sandboxOutputBytes = (document: Document.Document) =>
  Math.max(Cmd.DEFAULT_MAX_OUTPUT_BYTES, ...allSteps(Object.values(document.steps)).filter((step) => step.kind === "cmd").map(Cmd.maxOutputBytes))

const buildSandbox = (document: Document.Document, options: Options, maxOutputBytes: number | undefined) => {
  const choice = options.sandbox ?? document.runtime?.sandbox ?? "local"
  const cwd = options.cwd ?? document.runtime?.cwd
  const layer = RunSandbox.layer(choice, cwd, maxOutputBytes, options.virtual, options.concurrency ?? DEFAULT_CONCURRENCY)
  return Effect.map(
    Effect.mapError(Layer.build(layer), (error) =>
      new WorkflowFailed({ reason: "CmdFailed", step: "", description: `the sandbox could not start: ${error.message}`, cause: error })),
    (context) => Context.get(context, Sandbox.Sandbox)
  )
}

/** @since 0.1.0 @category models */
export interface PlanOptions {
  /** The model for agent steps that name none (the run's `model` option). */
  readonly model?: string | undefined
  /**
   * Whether a model with no API key fails the plan (the default, as a run must); `false` lets it
   * pass, for a check that needs no key (`missingKeys` says which are missing).
   */
  readonly keys?: boolean | undefined
}

/**
 * Every agent step's model as a run would choose it (the step's, else `options.model`, else the
 * runtime block's) resolved once per model, without a request: an unknown provider or a missing
 * key fails here, before the first step, naming the first step (in id order) that uses it. A model
 * written with `${…}` is known only as the step runs, and a step with no model at all fails then.
 * A `Model` service in the context serves every agent step whatever it names (as in a session).
 */
const models = (document: Document.Document, options: PlanOptions): Effect.Effect<void, WorkflowFailed> =>
  Effect.asVoid(modelsChecked(document, options, options.keys !== false))

/**
 * Each agent step (its first, in id order) whose model's provider has no API key, and why, without
 * failing: what a check that needs no key warns of.
 *
 * @since 0.1.0
 * @category constructors
 */
export const missingKeys = (document: Document.Document, options: PlanOptions = {}): Effect.Effect<ReadonlyArray<WorkflowFailed>> =>
  Effect.catch(modelsChecked(document, options, false), () => Effect.succeed([]))

/** The models checked: every failure fails, or a missing key is collected when `keys` is false. */
const modelsChecked = (document: Document.Document, options: PlanOptions, keys: boolean): Effect.Effect<ReadonlyArray<WorkflowFailed>, WorkflowFailed> =>
  Effect.gen(function*() {
    const missing: Array<WorkflowFailed> = []
    if (Option.isSome(yield* Effect.serviceOption(Model.Model))) return missing
    const fallback = options.model ?? (typeof document.runtime?.model === "string" ? document.runtime.model : undefined)
    const agents = Object.keys(document.steps).sort().flatMap((id) =>
      allSteps([document.steps[id]!]).flatMap((step) => (step.kind === "agent" ? [[id, step.model ?? fallback] as const] : []))
    )
    const checked = new Set<string>()
    for (const [id, model] of agents) {
      if (model === undefined || Template.hasPlaceholder(model) || checked.has(model)) continue
      checked.add(model)
      const resolved = yield* Effect.result(Model.resolve(model))
      if (Result.isSuccess(resolved)) continue
      const failed = new WorkflowFailed({ reason: "AgentFailed", step: id, description: resolved.failure.message, cause: resolved.failure })
      if (keys || resolved.failure.reason._tag !== "MissingApiKey") return yield* failed
      missing.push(failed)
    }
    return missing
  })

/**
 * Every check a run makes before its first step that needs neither inputs nor processes: the
 * graph (unknown dependencies, cycles), the members read of step outputs, the inputs read (each
 * declared), the input declarations
 * and their defaults, the MCP server declarations, and the agent steps' models (their provider
 * and key). `run` makes them first; `Workflow.check` makes them too, so a file `check` passes
 * fails a run only for its inputs, its sandbox, its servers' or models' answers.
 *
 * @since 0.1.0
 * @category constructors
 */
export const plan = (document: Document.Document, options: PlanOptions = {}): Effect.Effect<Graph.Graph, WorkflowFailed> =>
  Effect.gen(function*() {
    const graph = yield* Result.match(Graph.make(document.steps), { onSuccess: Effect.succeed, onFailure: Effect.fail })
    yield* Result.match(Outputs.check(document), { onSuccess: Effect.succeed, onFailure: Effect.fail })
    yield* Result.match(Inputs.checkReads(document), { onSuccess: Effect.succeed, onFailure: Effect.fail })
    yield* Inputs.checkDeclarations(document.inputs ?? {})
    yield* Effect.mapError(
      validateServers(document.mcp_servers ?? {}),
      (error) => new WorkflowFailed({ reason: "McpFailed", step: "", description: error.message, cause: error })
    )
    yield* models(document, options)
    return graph
  })

/**
 * The servers with the `${…}` of their command, args, env, url, headers and auth evaluated with the
 * inputs (the Validator allows no other root there); each value read as a string, as argv is.
 */
const serversWithInputs = (
  servers: Readonly<Record<string, Document.McpServerSpec>>,
  inputs: Readonly<Record<string, Expression.Value>>
): Effect.Effect<Readonly<Record<string, Document.McpServerSpec>>, WorkflowFailed> =>
  Effect.forEach(Object.entries(servers), ([id, spec]) => {
    const templated = Object.fromEntries(MCP_TEMPLATED.filter((key) => spec[key] !== undefined).map((key) => [key, spec[key]]))
    return Result.match(Template.interpolate(templated, { inputs }), {
      onFailure: (error) =>
        Effect.fail(new WorkflowFailed({ reason: "InterpolateFailed", step: "", description: `mcp_server ${id}: ${error.message}` })),
      onSuccess: (values) => {
        const asText = (value: Expression.Value): Expression.Value =>
          Array.isArray(value)
            ? value.map(Template.stringify)
            : typeof value === "object" && value !== null
            ? Object.fromEntries(Object.entries(value).map(([key, item]) => [key, Template.stringify(item)]))
            : Template.stringify(value)
        const evaluated = Object.fromEntries(Object.entries(values as Readonly<Record<string, Expression.Value>>).map(([key, value]) => [key, asText(value)]))
        // The Validator made these a string, a list of strings and maps of strings; `asText` keeps those shapes.
        return Effect.succeed([id, { ...spec, ...evaluated } as Document.McpServerSpec] as const)
      }
    })
  }).pipe(Effect.map((entries) => Object.fromEntries(entries)))

/**
 * Runs a document.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run: (
  document: Document.Document,
  options?: Options
) => Effect.Effect<RunResult, WorkflowFailed, FileSystem.FileSystem | Path.Path | ProcessBudget.ProcessBudget> = Effect.fn("Workflow.run")(function*(
  document: Document.Document,
  options: Options = {}
) {
  const emit = options.onEvent ?? (() => Effect.void)
  const started = yield* Clock.currentTimeMillis
  const graph = yield* plan(document, { model: options.model })
  const inputs = yield* Inputs.resolve(document.inputs ?? {}, options.inputs ?? {})
  // A sandbox the run builds collects what its largest cmd step accepts; a caller's has its own cap.
  const collects = typeof options.sandbox === "object" ? undefined : sandboxOutputBytes(document)
  const sandbox = yield* buildSandbox(document, options, collects)
  const servers = yield* serversWithInputs(document.mcp_servers ?? {}, inputs)
  const mcpTools = Object.keys(servers).length === 0
    ? []
    : yield* Effect.mapError(
      Effect.flatMap(Effect.service(McpServers), (service) => service.open(servers)),
      (error) => new WorkflowFailed({ reason: "McpFailed", step: "", description: error.message, cause: error })
    )
  const tools = new Map<string, Tool.Tool>()
  for (const tool of [...BUILT_INS, ...mcpTools, ...(options.tools ?? [])]) tools.set(tool.name, tool)
  const toolExecutor = Result.getOrThrow(ToolExecutor.make([...tools.values()]))
  const runtimeModel = typeof document.runtime?.model === "string" ? document.runtime.model : undefined
  const context: StepContext = {
    workflow: document.name,
    sandbox,
    tools,
    toolExecutor,
    model: options.model ?? runtimeModel,
    maxOutputBytes: collects,
    onEvent: options.onEvent,
    approval: document.approval,
    approve: options.approve ?? Approval.nobody
  }

  const permits = yield* Semaphore.make(Math.max(1, options.concurrency ?? DEFAULT_CONCURRENCY))
  const templates = new Map<string, Template.Template>()
  const parseCached = (source: string) => {
    const known = templates.get(source)
    if (known !== undefined) return Result.succeed(known)
    return Result.map(Template.parse(source), (template) => {
      templates.set(source, template)
      return template
    })
  }
  const slots = new Map<string, Deferred.Deferred<Slot>>()
  for (const id of graph.order) slots.set(id, yield* Deferred.make<Slot>())
  const outputs: Record<string, Expression.Value> = {}
  const skipped = new Set<string>()
  const now = Clock.currentTimeMillis

  const interpolate = (id: string, value: unknown, scope: Scope) =>
    Result.match(Template.interpolate(value, scope, parseCached), {
      onSuccess: Effect.succeed,
      onFailure: (error) => Effect.fail(new WorkflowFailed({ reason: "InterpolateFailed", step: id, description: error.message }))
    })

  /** `when`: absent is true; anything but a boolean fails the run. */
  const gate = (id: string, step: Document.Step, scope: Scope) =>
    step.when === undefined
      ? Effect.succeed(true)
      : Effect.flatMap(
        Effect.mapError(interpolate(id, step.when, scope), (error) => new WorkflowFailed({ ...error, reason: "WhenFailed" })),
        (value) =>
          typeof value === "boolean"
            ? Effect.succeed(value)
            : Effect.fail(new WorkflowFailed({ reason: "WhenFailed", step: id, description: `when must be true or false, got ${Expression.show(value)}` }))
      )

  /** One leaf step under a permit, reported as it starts and ends; `restarted` when a journal says an earlier process died in it. */
  const runLeaf = (id: string, step: Exclude<Document.Step, Document.MapStep>, fields: Readonly<Record<string, Expression.Value>>) =>
  (restarted: boolean) =>
    Effect.gen(function*() {
      const start = yield* now
      yield* emit(new WorkflowEvent.StepStarted({ step: id, at: start, ...(restarted ? { restarted } : {}) }))
      const outcome = yield* Effect.exit<Expression.Value, WorkflowFailed, never>(
        step.kind === "cmd"
          ? Cmd.run(id, fields, context)
          : step.kind === "tool"
          ? ToolStep.run(id, fields, context)
          : step.kind === "http"
          ? Http.run(id, fields)
          : Agent.run(id, fields, context)
      )
      const end = yield* now
      if (outcome._tag === "Success") {
        const resumed = options.journal === undefined ? {} : { resumed: false }
        yield* emit(new WorkflowEvent.StepFinished({ step: id, at: end, durationMs: end - start, ...resumed }))
        return outcome.value as Expression.Value
      }
      const failure = outcome.cause.reasons.find((reason) => reason._tag === "Fail")
      if (failure !== undefined) {
        yield* emit(new WorkflowEvent.StepFailed({ step: id, at: end, durationMs: end - start, error: failure.error.message }))
      }
      return yield* Effect.failCause(outcome.cause)
    })

  /** A leaf step through the journal, when the run has one: a step it recorded is not run again. */
  const leaf = (id: string, step: Exclude<Document.Step, Document.MapStep>, scope: Scope) =>
    permits.withPermits(1)(Effect.gen(function*() {
      const { kind: _, needs: __, when: ___, ...rest } = step
      const fields = (yield* interpolate(id, rest, scope)) as Readonly<Record<string, Expression.Value>>
      if (options.journal === undefined) return yield* runLeaf(id, step, fields)(false)
      const entry = yield* options.journal.step(id, runLeaf(id, step, fields))
      if (entry.replayed) yield* emit(new WorkflowEvent.StepFinished({ step: id, at: yield* now, durationMs: 0, resumed: true }))
      return entry.value
    }))

  /** A step of any kind once its dependencies are done: skipped, gated, or run. */
  const execute = (id: string, step: Document.Step, scope: Scope): Effect.Effect<Slot, WorkflowFailed> =>
    Effect.gen(function*() {
      if (!(yield* gate(id, step, scope))) {
        yield* emit(new WorkflowEvent.StepSkipped({ step: id, at: yield* now, why: "when is false" }))
        return { skipped: true, value: null }
      }
      if (step.kind !== "map") return { skipped: false, value: yield* leaf(id, step, scope) }
      const over = yield* interpolate(id, step.over, scope)
      if (!Array.isArray(over)) {
        return yield* new WorkflowFailed({ reason: "OverMustBeList", step: id, description: `over must be a list, got ${Expression.show(over)}` })
      }
      const start = yield* now
      yield* emit(new WorkflowEvent.StepStarted({ step: id, at: start }))
      const items = yield* Effect.forEach(
        over,
        (item: Expression.Value, i) => Effect.map(execute(`${id}[${i}]`, step.do, { ...scope, [step.as]: item }), (slot) => slot.value),
        { concurrency: step.concurrency ?? options.concurrency ?? DEFAULT_CONCURRENCY }
      )
      const end = yield* now
      yield* emit(new WorkflowEvent.StepFinished({ step: id, at: end, durationMs: end - start }))
      return { skipped: false, value: items }
    })

  const schedule = (id: string) =>
    Effect.gen(function*() {
      const deps = graph.dependencies.get(id)!
      const done = yield* Effect.forEach(deps, (dep) => Deferred.await(slots.get(dep)!))
      const skippedDep = deps.find((_, i) => done[i]!.skipped)
      let slot: Slot
      if (skippedDep !== undefined) {
        yield* emit(new WorkflowEvent.StepSkipped({ step: id, at: yield* now, why: `${skippedDep} was skipped` }))
        slot = { skipped: true, value: null }
      } else {
        const steps: Record<string, Expression.Value> = {}
        deps.forEach((dep, i) => (steps[dep] = done[i]!.value))
        slot = yield* execute(id, document.steps[id]!, { inputs, steps })
      }
      outputs[id] = slot.value
      if (slot.skipped) skipped.add(id)
      yield* Deferred.succeed(slots.get(id)!, slot)
    })

  yield* emit(new WorkflowEvent.RunStarted({ workflow: document.name, steps: graph.order, at: started }))
  const ran = yield* Effect.exit(Effect.forEach(graph.order, schedule, { concurrency: "unbounded", discard: true }))
  const output = ran._tag === "Success"
    ? yield* Effect.exit(interpolate("", document.output ?? null, { inputs, steps: outputs }))
    : ran
  const finished = yield* now
  yield* emit(new WorkflowEvent.RunFinished({ at: finished, durationMs: finished - started, ok: output._tag === "Success" }))
  if (output._tag === "Failure") return yield* Effect.failCause(output.cause)
  return { output: output.value as Expression.Value, steps: { ...outputs }, skipped: [...skipped].sort() } satisfies RunResult
}, Effect.scoped)
