/**
 * workflowsHandlers — the `workflows` group over the `WorkflowRuns` in context: a run is started
 * for the calling principal and read only by it (another's, or a run of another workflow, answers
 * as a missing one). Without a `WorkflowRuns` every route answers 404 and says why.
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../Api.ts"
import { Principal } from "../Auth.ts"
import { BadRequest, NotFound, TooManyRequests, Unavailable } from "../ServerError.ts"
import { WorkflowRuns, type WorkflowRunsError } from "../WorkflowRuns.ts"

/** The runs `GET /workflows/{name}/runs` gives when it is not told how many. */
const DEFAULT_RUNS = 50

const noWorkflows = new NotFound({ message: "no workflows are served here (condukt serve --workflows <dir> serves a directory's)" })

const noRun = (runId: string) => new NotFound({ message: `no run ${JSON.stringify(runId.slice(0, 64))} here` })

/** A `WorkflowRuns` error as the answer the Api documents. */
const answerOf = (error: WorkflowRunsError) =>
  error.reason === "UnknownWorkflow" || error.reason === "UnknownRun"
    ? new NotFound({ message: error.message })
    : error.reason === "InvalidInputs"
    ? new BadRequest({ message: error.message })
    : error.reason === "Busy"
    ? new TooManyRequests({ message: error.message })
    : new Unavailable({ message: error.message })

export const layer = HttpApiBuilder.group(Api, "workflows", Effect.fn(function*(handlers) {
  const served = yield* Effect.serviceOption(WorkflowRuns)
  return handlers
    .handle("list", () =>
      Option.isNone(served) ? Effect.fail(noWorkflows) : Effect.map(served.value.list, (workflows) => ({ workflows })))
    .handle("start", ({ params, payload }) =>
      Effect.gen(function*() {
        if (Option.isNone(served)) return yield* noWorkflows
        const principal = yield* Principal
        const runId = yield* Effect.mapError(served.value.start(params.name, payload.inputs ?? {}, principal.id), answerOf)
        const location = `/workflows/${encodeURIComponent(params.name)}/runs/${encodeURIComponent(runId)}`
        return { runId, workflow: params.name, location }
      }))
    .handle("runs", ({ params, query }) =>
      Effect.gen(function*() {
        if (Option.isNone(served)) return yield* noWorkflows
        const principal = yield* Principal
        const runs = yield* Effect.mapError(served.value.runs(params.name, principal.id, query.limit ?? DEFAULT_RUNS), (error) =>
          error.reason === "UnknownWorkflow" ? new NotFound({ message: error.message }) : new Unavailable({ message: error.message }))
        return { runs }
      }))
    .handle("get", ({ params }) =>
      Effect.gen(function*() {
        if (Option.isNone(served)) return yield* noWorkflows
        const principal = yield* Principal
        const owned = yield* Effect.mapError(served.value.get(params.runId), (error) =>
          error.reason === "UnknownRun" ? noRun(params.runId) : new Unavailable({ message: error.message }))
        if (owned.principal !== principal.id || owned.run.workflow !== params.name) return yield* noRun(params.runId)
        return owned.run
      }))
}))
