/**
 * The floor under bench/cluster: effect/cluster's own cost per call, with none of ours. A bare
 * entity with one persisted Rpc (a payload like a session's `Run`: a run id as its primary key and
 * a prompt) whose handler answers a constant short string at once; served on the same cluster
 * layers a session runner uses (`Runner.layerSharding`, the SQL message storage on one SQLite
 * file). Not a benchmark itself: bench/run.ts runs only the files directly in bench/.
 */
import { Effect, Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

/** Answers "Noted." to any prompt; persisted, delivered once per `runId`, like a session's `Run`. */
export const Run = Rpc.make("Run", {
  payload: { runId: Schema.String, prompt: Schema.String },
  success: Schema.String,
  primaryKey: ({ runId }) => runId
}).annotate(ClusterSchema.Persisted, true)

/** The bare entity type. */
export const Bare = Entity.make("Bare", [Run])

/** Its handler on this runner. */
export const layer = Bare.toLayer(Bare.of({ Run: () => Effect.succeed("Noted.") }))
