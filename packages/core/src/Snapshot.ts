/**
 * Snapshot — what a SessionStore keeps of a session: enough to resume it in another process.
 *
 * A snapshot is versioned. The current version (2) holds the session id, the agent's name, the
 * configured model and system prompt (without the project instructions, which are read again at
 * each start), the messages, the assigns, when it was created and last updated (epoch
 * milliseconds), and the `batch` of the last message's tool calls while they ran or waited for approval,
 * with where their run stood (the `Loop`'s state: what a run continued after a restart goes on from). `decode`
 * reads any version this Condukt knows and migrates it: a record without a version is version 1, the shape Condukt (Elixir) wrote before it versioned its snapshots
 * (messages, model, system prompt). A newer version is refused (`UnsupportedVersion`), anything
 * else that does not decode is `Corrupt`; the caller names the file or row. The module refuses
 * I/O: stores read and write, this only checks.
 *
 * Assigns are stored as JSON values: what JSON cannot hold (a function, a class instance's
 * prototype) does not survive a resume.
 */
import { Result, Schema } from "effect"
import { ApprovalRecord } from "./ApprovalRecord.ts"
import { Message } from "./Message.ts"
import { Corrupt, UnsupportedVersion } from "./SessionStoreError.ts"
import { Usage } from "./Usage.ts"

// ---------------------------------------------------------------------------------------------
// Schemas and models
// ---------------------------------------------------------------------------------------------

/** The version this Condukt writes. */
export const CURRENT_VERSION = 2

/**
 * A run's settings as a batch keeps them, so the run that continues it after a restart asks the
 * model as the first did: its `modelOptions`, its `outputRetries`, and its `output` Schema as a
 * JSON Schema document (what a JSON Schema cannot say, a refinement's predicate or a transformation,
 * the continued run's answer is not checked against).
 *
 * @since 0.1.0
 * @category models
 */
export const RunOptions = Schema.Struct({
  modelOptions: Schema.optionalKey(Schema.Struct({
    maxTokens: Schema.optionalKey(Schema.Finite),
    temperature: Schema.optionalKey(Schema.Finite),
    topP: Schema.optionalKey(Schema.Finite),
    stopSequences: Schema.optionalKey(Schema.Array(Schema.String)),
    toolChoice: Schema.optionalKey(Schema.Union([Schema.Literals(["auto", "none", "required"]), Schema.Struct({ tool: Schema.String })])),
    reasoning: Schema.optionalKey(Schema.Struct({
      effort: Schema.optionalKey(Schema.Literals(["minimal", "low", "medium", "high"])),
      budgetTokens: Schema.optionalKey(Schema.Finite)
    }))
  })),
  outputRetries: Schema.optionalKey(Schema.Int),
  /** The `output` Schema's JSON Schema (draft 2020-12) and the definitions it refers to. */
  output: Schema.optionalKey(Schema.Struct({ schema: Schema.Unknown, definitions: Schema.Record(Schema.String, Schema.Unknown) }))
})
export type RunOptions = typeof RunOptions.Type

/**
 * Where the run of a batch stood (the `Loop`'s progress): its model requests so far, where its
 * messages start, its tokens and last finish, its answers corrected, a prompt queued behind it,
 * and its settings. A run continued after a restart goes on from here.
 *
 * @since 0.1.0
 * @category models
 */
export const Run = Schema.Struct({
  turn: Schema.Int,
  from: Schema.Int,
  usage: Usage,
  finishReason: Schema.Literals(["stop", "tool-calls", "length", "content-filter", "other"]),
  retries: Schema.Int,
  then: Schema.optionalKey(Schema.String),
  options: Schema.optionalKey(RunOptions)
})
export type Run = typeof Run.Type

/**
 * The tool calls of the last message while they run or wait (docs/persistence.md, docs/approvals.md):
 * those waiting for a person's answer, the results of those that finished, and (`started`) those
 * whose start was committed before they ran and that had not finished when the snapshot was saved.
 * With `started`, a call in none of the three had not started; without it (a snapshot saved by an
 * older Condukt, which recorded only approvals), a call in neither list was running. A batch
 * with empty lists after a history that ends with the calls' results: the run was in flight, the
 * model's next turn due.
 *
 * @since 0.1.0
 * @category models
 */
export const Batch = Schema.Struct({
  waiting: Schema.Array(Schema.Struct({ callId: Schema.String, tool: Schema.String, input: Schema.Unknown })),
  results: Schema.Array(Schema.Struct({ callId: Schema.String, content: Schema.String, isError: Schema.Boolean })),
  started: Schema.optionalKey(Schema.Array(Schema.String)),
  /** The run the batch is part of (absent in a snapshot saved by an older Condukt: a continued run starts its tally afresh). */
  run: Schema.optionalKey(Run),
  /**
   * The batch's approval records, open and answered (docs/decisions/0088): a store with an
   * approval log indexes them in the same commit. Absent in a snapshot of an older Condukt.
   */
  approvals: Schema.optionalKey(Schema.Array(ApprovalRecord))
})
export type Batch = typeof Batch.Type

/**
 * A snapshot as this Condukt writes it.
 *
 * @since 0.1.0
 * @category models
 */
export const Snapshot = Schema.Struct({
  version: Schema.Literal(CURRENT_VERSION),
  id: Schema.String,
  agent: Schema.String,
  model: Schema.String,
  /** The agent's system prompt, without project instructions. */
  system: Schema.optionalKey(Schema.String),
  messages: Schema.Array(Message),
  assigns: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: Schema.Int,
  updatedAt: Schema.Int,
  /** Present while calls of the last message run or wait for approval. */
  batch: Schema.optionalKey(Batch)
})
export type Snapshot = typeof Snapshot.Type

/** Version 1: no version field, no agent, assigns or timestamps. */
const V1 = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  messages: Schema.Array(Message),
  model: Schema.optionalKey(Schema.String),
  system: Schema.optionalKey(Schema.String)
})

const Versioned = Schema.Struct({ version: Schema.Finite })

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * A snapshot of the current version.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (fields: Omit<Snapshot, "version">): Snapshot => ({ version: CURRENT_VERSION, ...fields })

// ---------------------------------------------------------------------------------------------
// Decoding and migration
// ---------------------------------------------------------------------------------------------

const decodeCurrent = Schema.decodeUnknownResult(Snapshot)
const decodeV1 = Schema.decodeUnknownResult(V1)
const decodeVersioned = Schema.decodeUnknownResult(Versioned)

const corrupt = (error: Schema.SchemaError) => new Corrupt({ description: error.message.replace(/\s*\n\s*/g, " ") })

/**
 * Reads `input` (parsed JSON) as a snapshot of any known version, migrated to the current one.
 * `id` fills what version 1 did not record; its timestamps become 0 (unknown).
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = (input: unknown, id: string): Result.Result<Snapshot, Corrupt | UnsupportedVersion> => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return Result.fail(new Corrupt({ description: "expected a JSON object" }))
  }
  if (!("version" in input)) {
    return Result.mapBoth(decodeV1(input), {
      onFailure: corrupt,
      onSuccess: (v1) =>
        make({
          id: v1.id ?? id,
          agent: "",
          model: v1.model ?? "",
          ...(v1.system === undefined ? {} : { system: v1.system }),
          messages: v1.messages,
          assigns: {},
          createdAt: 0,
          updatedAt: 0
        })
    })
  }
  const versioned = decodeVersioned(input)
  if (Result.isFailure(versioned)) return Result.fail(corrupt(versioned.failure))
  const version = versioned.success.version
  if (version > CURRENT_VERSION) return Result.fail(new UnsupportedVersion({ version, supported: CURRENT_VERSION }))
  if (version !== CURRENT_VERSION) return Result.fail(new Corrupt({ description: `unknown snapshot version ${version}` }))
  return Result.mapError(decodeCurrent(input), corrupt)
}
