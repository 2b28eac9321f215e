/**
 * WorkflowsApi — the `workflows` group of the `Api`: the workflows a server runs (a program's
 * `WorkflowRuns`, `condukt serve --workflows <dir>`), a run started with its inputs, the
 * principal's runs of a workflow (newest first), and a run read (each step's state, its output, the outcome) until it ends. Credentials are needed; a run
 * another principal started answers 404, as does every route on a server that serves no workflows.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Authentication } from "./Auth.ts"
import * as Limits from "./Limits.ts"
import { BadRequest, NotFound, TooManyRequests, Unavailable } from "./ServerError.ts"
import { RunView, StartRun, WorkflowView } from "./WorkflowRuns.ts"

const name = Schema.String.check(Schema.isMaxLength(Limits.MAX_ID_LENGTH))

/**
 * A run just started: its id, and where to read it.
 *
 * @since 0.1.0
 * @category models
 */
export const RunStarted = Schema.Struct({ runId: Schema.String, workflow: Schema.String, location: Schema.String })
export type RunStarted = typeof RunStarted.Type

/** @since 0.1.0 @category groups */
export class WorkflowsApi extends HttpApiGroup.make("workflows")
  .add(
    HttpApiEndpoint.get("list", "/", {
      success: Schema.Struct({ workflows: Schema.Array(WorkflowView) }),
      error: [NotFound, Unavailable]
    }),
    HttpApiEndpoint.post("start", "/:name/runs", {
      params: { name },
      payload: StartRun,
      success: RunStarted.pipe(HttpApiSchema.status(201)),
      error: [NotFound, BadRequest, TooManyRequests, Unavailable]
    }),
    HttpApiEndpoint.get("runs", "/:name/runs", {
      params: { name },
      query: { limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Limits.MAX_PAGE }))) },
      success: Schema.Struct({ runs: Schema.Array(RunView) }),
      error: [NotFound, Unavailable]
    }),
    HttpApiEndpoint.get("get", "/:name/runs/:runId", {
      params: { name, runId: name },
      success: RunView,
      error: [NotFound, Unavailable]
    })
  )
  .middleware(Authentication)
  .prefix("/workflows")
{}
