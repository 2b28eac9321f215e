/**
 * ServedWorkflows — the server's `WorkflowRuns` over HCL workflows (`condukt serve --workflows
 * <dir>`): a run is started by the workflow's name with inputs checked against its declarations,
 * runs in the server's scope whoever watches, is listed among its principal's runs of the workflow
 * (newest first), and is read as each step's state (from the run's
 * events), the steps' outputs and the workflow's output once it ends.
 *
 * With `durable`, each run is a `Durable` run in that database (as `condukt run --durable` keeps
 * one) and a table beside its journal records the workflow, the principal, the inputs and, once
 * it ends, its final view: a server started again on the same database resumes every run that was
 * going (the steps that finished are not run again: they read `resumed`) and answers for the
 * finished ones. A run whose dead server's lease has not lapsed yet waits for it.
 *
 * Every text a run gives back (errors, outputs) goes through the workflow's redactor, holding the
 * secret values it names, as the CLI's printed lines do. No one answers approvals here: a call
 * that waits for one fails its step (`Approval.nobody`).
 */
import { Redactor } from "@condukt/core"
import type { ProcessBudget } from "@condukt/core"
import { type Document, Durable, Inputs, Workflow, type WorkflowError, type WorkflowEvent } from "@condukt/workflows"
import { WorkflowRuns } from "@condukt/server"
import { Cause, Clock, Duration, Effect, Exit, type FileSystem, type Path, Schedule, type Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as DurableStore from "./DurableStore.ts"
import * as ProcessIdentity from "./internal/processIdentity.ts"
import * as ServedRunsTable from "./internal/servedRunsTable.ts"

/** Most runs going at once; a start past it is refused (`Busy`, a 429) until one ends. */
export const MAX_RUNNING = 32

/** Most runs kept in memory: past it the oldest finished ones are forgotten (a durable server still reads them from its database). */
export const MAX_KEPT = 1000

/** Most steps a run's view tracks (a `map`'s items included). */
export const MAX_STEPS = 1000

/**
 * A workflow served: its file, its document, and the redactor of the secrets it names.
 *
 * @since 0.1.0
 * @category models
 */
export interface Served {
  readonly file: string
  readonly document: Document.Document
  readonly redact: (text: string) => string
}

/** @since 0.1.0 @category models */
export interface Options {
  readonly workflows: ReadonlyArray<Served>
  /** The database runs are kept in (`db` as given, `sql` a client on it), and their lease's duration. */
  readonly durable?: { readonly db: string; readonly sql: SqlClient.SqlClient; readonly lease: Duration.Duration | undefined } | undefined
}

/** A run as the server follows it. */
interface Entry {
  readonly runId: string
  readonly principal: string
  readonly workflow: string
  readonly inputs: Readonly<Record<string, Schema.Json>>
  /** Epoch ms. */
  readonly startedAt: number
  readonly steps: Record<string, WorkflowRuns.StepView>
  outcome: WorkflowRuns.RunView["outcome"]
  output?: Schema.Json
  error?: string
}

const refused = (reason: WorkflowRuns.WorkflowRunsError["reason"], message: string) => new WorkflowRuns.WorkflowRunsError({ reason, message })

const viewOf = (entry: Entry, durable: boolean): WorkflowRuns.RunView => ({
  runId: entry.runId,
  workflow: entry.workflow,
  inputs: entry.inputs,
  startedAt: entry.startedAt,
  outcome: entry.outcome,
  steps: { ...entry.steps },
  ...(entry.output === undefined ? {} : { output: entry.output }),
  ...(entry.error === undefined ? {} : { error: entry.error }),
  durable
})

/** A step's new state from one of the run's events. */
const step = (entry: Entry, id: string, view: WorkflowRuns.StepView) => {
  if (Object.hasOwn(entry.steps, id) || Object.keys(entry.steps).length < MAX_STEPS) entry.steps[id] = view
}

const follow = (entry: Entry, redact: (text: string) => string) => (event: WorkflowEvent.WorkflowEvent) =>
  Effect.sync(() => {
    switch (event._tag) {
      case "StepStarted":
        return step(entry, event.step, { state: "running", ...(event.restarted === true ? { restarted: true } : {}) })
      case "StepFinished":
        return step(entry, event.step, {
          state: "finished",
          ...(event.resumed === true ? { resumed: true } : {}),
          ...(entry.steps[event.step]?.restarted === true ? { restarted: true } : {})
        })
      case "StepSkipped":
        return step(entry, event.step, { state: "skipped", why: redact(event.why) })
      case "StepFailed":
        return step(entry, event.step, { state: "failed", error: redact(event.error) })
    }
  })

/** The run's end: its outcome, the steps' outputs and the workflow's, or the error. */
const end = (entry: Entry, redact: (text: string) => string, exit: Exit.Exit<{ readonly output: unknown; readonly steps: Readonly<Record<string, unknown>> }, { readonly message: string }>) => {
  if (Exit.isSuccess(exit)) {
    for (const [id, value] of Object.entries(exit.value.steps)) {
      const current = entry.steps[id]
      if (current !== undefined && current.state === "finished") entry.steps[id] = { ...current, output: Redactor.redactValue(redact, value as Schema.Json) }
    }
    entry.output = Redactor.redactValue(redact, exit.value.output as Schema.Json)
    entry.outcome = "succeeded"
    return
  }
  const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  entry.error = redact(failure === undefined ? "the run stopped unexpectedly" : failure.error.message)
  entry.outcome = "failed"
}

/**
 * The service, living as long as the scope: its runs are interrupted when it closes (a durable
 * one resumes when a server is started again on its database).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options) {
  const byName = new Map(options.workflows.map((served) => [served.document.name, served]))
  const context = yield* Effect.context<FileSystem.FileSystem | Path.Path | ProcessBudget.ProcessBudget>()
  const scope = yield* Effect.scope
  const durable = options.durable
  const sql = durable?.sql
  const table = sql === undefined ? undefined : ServedRunsTable.make(sql)
  const location = durable === undefined ? "" : DurableStore.location(durable.db)
  const unavailable = (error: { readonly message: string }) => refused("Unavailable", `the runs' database ${location} failed: ${error.message}`)
  const runs = new Map<string, Entry>()
  // One pool of worker threads for the virtual sandboxes of every run the server makes, living as
  // long as it: a pool per run would start a worker (~30 MB, ~100 ms) for each (docs/decisions/0100).
  const virtual = options.workflows.some((served) => served.document.runtime?.sandbox === "virtual")
    ? { workers: yield* Effect.flatMap(Effect.promise(() => import("@condukt/sandbox-virtual/WorkerPool")), (WorkerPool) => WorkerPool.make({ warmWorkers: 0 })) }
    : undefined

  /** Forgets the oldest finished runs past `MAX_KEPT`. */
  const evict = () => {
    for (const [id, entry] of runs) {
      if (runs.size <= MAX_KEPT) return
      if (entry.outcome !== "running") runs.delete(id)
    }
  }

  /** The run, as a durable run resumed or started, or a plain one. */
  const running = (served: Served, entry: Entry, resume: boolean) => {
    const onEvent = follow(entry, served.redact)
    const inputs = entry.inputs
    if (durable === undefined || sql === undefined) return Workflow.run(served.document, { inputs, onEvent, virtual })
    const once = (resume: boolean): Effect.Effect<{ readonly output: unknown; readonly steps: Readonly<Record<string, unknown>> }, WorkflowError.WorkflowFailed | WorkflowError.DurableFailed, FileSystem.FileSystem | Path.Path | ProcessBudget.ProcessBudget> =>
      Durable.run(served.document, {
        inputs,
        onEvent,
        virtual,
        runId: entry.runId,
        resume,
        location,
        file: served.file,
        holder: ProcessIdentity.current(),
        lease: durable.lease
      }).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        // Killed before the run was recorded: it starts now, with the inputs the table kept.
        Effect.catchIf((error) => resume && error._tag === "DurableFailed" && error.reason === "UnknownRun", () => once(false))
      )
    // A dead server's lease lapses on its own: until then the run is refused as busy.
    return Effect.retry(once(resume), {
      while: (error) => error._tag === "DurableFailed" && error.reason === "RunBusy",
      schedule: Schedule.spaced(Duration.millis(500)),
      times: 600
    })
  }

  /** Runs `entry` in the server's scope to its end, recorded then in the database when there is one. */
  const launch = (served: Served, entry: Entry, resume: boolean) =>
    running(served, entry, resume).pipe(
      Effect.exit,
      Effect.flatMap((exit) => {
        // Stopped with the server (Ctrl-C, SIGTERM): not an end; a durable run resumes with the next server.
        if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) return Effect.void
        end(entry, served.redact, exit)
        evict()
        return table === undefined ? Effect.void : Effect.ignore(table.finish(viewOf(entry, true)))
      }),
      Effect.provide(context),
      Effect.forkIn(scope),
      Effect.asVoid
    )

  const newEntry = (runId: string, workflow: string, principal: string, inputs: Readonly<Record<string, Schema.Json>>, startedAt: number, served: Served | undefined): Entry => ({
    runId,
    principal,
    workflow,
    inputs,
    startedAt,
    steps: Object.fromEntries(Object.keys(served?.document.steps ?? {}).slice(0, MAX_STEPS).map((id) => [id, { state: "pending" as const }])),
    outcome: "running"
  })

  // The runs a server on this database left going: resumed (or ended, when their workflow is no longer served).
  if (table !== undefined) {
    yield* Effect.mapError(table.ready, unavailable)
    for (const row of yield* Effect.mapError(table.running(MAX_KEPT), unavailable)) {
      const served = byName.get(row.workflow)
      const entry = newEntry(row.id, row.workflow, row.principal, row.inputs, row.started, served)
      runs.set(row.id, entry)
      if (served !== undefined) {
        yield* launch(served, entry, true)
      } else {
        entry.outcome = "failed"
        entry.error = `the workflow ${row.workflow} is no longer served here: its run cannot go on`
        yield* Effect.ignore(table.finish(viewOf(entry, true)))
      }
    }
  }

  const list = Effect.sync(() =>
    options.workflows.map(({ document }): WorkflowRuns.WorkflowView => ({
      name: document.name,
      inputs: Object.fromEntries(Object.entries(document.inputs ?? {}).map(([id, spec]) => [id, {
        type: spec.type,
        ...(spec.description === undefined ? {} : { description: spec.description }),
        ...(spec.default === undefined ? {} : { default: spec.default }),
        ...(spec.enum === undefined ? {} : { enum: spec.enum })
      }])),
      steps: Object.keys(document.steps)
    }))
  )

  const start = Effect.fn("ServedWorkflows.start")(function*(name: string, inputs: Readonly<Record<string, Schema.Json>>, principal: string) {
    const served = byName.get(name)
    if (served === undefined) {
      return yield* refused("UnknownWorkflow", `no workflow ${JSON.stringify(name.slice(0, 64))} is served here (GET /workflows lists them)`)
    }
    yield* Effect.mapError(Inputs.resolve(served.document.inputs ?? {}, inputs), (error) => refused("InvalidInputs", served.redact(error.message)))
    const runId = yield* Durable.newRunId
    // Counted and taken at once (no yield between), so concurrent starts cannot pass the bound.
    let going = 0
    for (const entry of runs.values()) if (entry.outcome === "running") going++
    if (going >= MAX_RUNNING) return yield* refused("Busy", `${MAX_RUNNING} runs are going: start this one once one has ended`)
    const entry = newEntry(runId, name, principal, inputs, yield* Clock.currentTimeMillis, served)
    runs.set(runId, entry)
    evict()
    if (table !== undefined) {
      yield* Effect.mapError(table.insert({ id: runId, workflow: name, principal, inputs, started: entry.startedAt }), unavailable).pipe(
        Effect.tapError(() => Effect.sync(() => runs.delete(runId)))
      )
    }
    yield* launch(served, entry, false)
    return runId
  })

  const get = Effect.fn("ServedWorkflows.get")(function*(runId: string) {
    const entry = runs.get(runId)
    if (entry !== undefined) return { principal: entry.principal, run: viewOf(entry, durable !== undefined) }
    const row = table === undefined ? undefined : yield* Effect.mapError(table.get(runId), unavailable)
    if (row === undefined) return yield* refused("UnknownRun", `no run ${JSON.stringify(runId.slice(0, 64))} here`)
    return { principal: row.principal, run: row.view ?? viewOf(newEntry(row.id, row.workflow, row.principal, row.inputs, row.started, byName.get(row.workflow)), true) }
  })

  const runsOf = Effect.fn("ServedWorkflows.runs")(function*(name: string, principal: string, limit: number) {
    if (!byName.has(name)) return yield* refused("UnknownWorkflow", `no workflow ${JSON.stringify(name.slice(0, 64))} is served here (GET /workflows lists them)`)
    // A durable server's table has every run, finished ones it forgot included; the ones going are read as they are now.
    if (table !== undefined) {
      const rows = yield* Effect.mapError(table.list(name, principal, limit), unavailable)
      return rows.map((row) => {
        const entry = runs.get(row.id)
        return entry !== undefined ? viewOf(entry, true) : row.view ?? viewOf(newEntry(row.id, row.workflow, row.principal, row.inputs, row.started, byName.get(row.workflow)), true)
      })
    }
    const found: Array<WorkflowRuns.RunView> = []
    for (const entry of Array.from(runs.values()).reverse()) {
      if (found.length >= limit) break
      if (entry.workflow === name && entry.principal === principal) found.push(viewOf(entry, false))
    }
    return found
  })

  return WorkflowRuns.WorkflowRuns.of({ list, start, get, runs: runsOf })
})
