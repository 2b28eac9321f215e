/**
 * Document — the canonical workflow: what an HCL file compiles to and what the run engine runs.
 *
 * A plain, string-keyed JSON value (Condukt's shape): `name`, `inputs`, `runtime`,
 * `mcp_servers`, `approval`, `steps` and `output`, with `inputs.`/`steps.` references inside `${…}` strings.
 * This module owns the Schema of that shape; the rules beyond shape (ids, explicit needs, a map's
 * inner step) are the Validator's. It refuses nothing by itself and runs nothing.
 */
import { Schema } from "effect"

/** Step and map-binding ids: `^[a-zA-Z_][a-zA-Z0-9_]*$` (no hyphens: they must read as identifiers). */
export const STEP_ID = /^[a-zA-Z_][a-zA-Z0-9_]*$/
/** Workflow names and MCP server ids: `^[a-zA-Z][a-zA-Z0-9_-]*$`. */
export const NAME = /^[a-zA-Z][a-zA-Z0-9_-]*$/

export const INPUT_TYPES = ["string", "integer", "number", "boolean", "array", "object"] as const
export const TRANSPORTS = ["stdio", "http", "http_sse", "streamable_http"] as const
export const SANDBOXES = ["local", "virtual"] as const
export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] as const
export const STEP_KINDS = ["cmd", "agent", "http", "tool", "map"] as const
/** The mcp_server attributes whose `${…}` are evaluated, with the inputs only, before the servers open. */
export const MCP_TEMPLATED = ["command", "args", "env", "url", "headers", "auth"] as const

const Json = Schema.Json
const StringMap = Schema.Record(Schema.String, Schema.String)

/** @since 0.1.0 @category models */
export const InputSpec = Schema.Struct({
  type: Schema.Literals(INPUT_TYPES),
  description: Schema.optionalKey(Schema.String),
  default: Schema.optionalKey(Json),
  enum: Schema.optionalKey(Schema.Array(Json)),
  items: Schema.optionalKey(Schema.Record(Schema.String, Json))
})
export type InputSpec = typeof InputSpec.Type

/** @since 0.1.0 @category models */
export const Runtime = Schema.Struct({
  model: Schema.optionalKey(Schema.Union([Schema.String, Schema.Record(Schema.String, Json)])),
  sandbox: Schema.optionalKey(Schema.Literals(SANDBOXES)),
  cwd: Schema.optionalKey(Schema.String)
})
export type Runtime = typeof Runtime.Type

/** @since 0.1.0 @category models */
export const McpServerSpec = Schema.Struct({
  transport: Schema.Literals(TRANSPORTS),
  command: Schema.optionalKey(Schema.String),
  args: Schema.optionalKey(Schema.Array(Schema.String)),
  env: Schema.optionalKey(Schema.Array(Schema.String)),
  url: Schema.optionalKey(Schema.String),
  headers: Schema.optionalKey(StringMap),
  auth: Schema.optionalKey(Schema.Record(Schema.String, Json)),
  prefix: Schema.optionalKey(Schema.String),
  init_timeout: Schema.optionalKey(Schema.Int),
  request_timeout: Schema.optionalKey(Schema.Int)
})
export type McpServerSpec = typeof McpServerSpec.Type

const common = {
  needs: Schema.optionalKey(Schema.Array(Schema.String)),
  when: Schema.optionalKey(Schema.String)
}

/**
 * Approval rules by tool name (docs/approvals.md): globs in three lists, and how long a request
 * waits (`timeout`: unanswered that long, a denial) and stays open (`expires`: its deadline is
 * saved with its record). A duration is seconds as a number, or a string with its unit (`"30m"`).
 *
 * @since 0.1.0
 * @category models
 */
export const ApprovalRules = Schema.Struct({
  allow: Schema.optionalKey(Schema.Array(Schema.String)),
  ask: Schema.optionalKey(Schema.Array(Schema.String)),
  deny: Schema.optionalKey(Schema.Array(Schema.String)),
  timeout: Schema.optionalKey(Schema.Union([Schema.Number, Schema.String])),
  expires: Schema.optionalKey(Schema.Union([Schema.Number, Schema.String]))
})
export type ApprovalRules = typeof ApprovalRules.Type

/** @since 0.1.0 @category models */
export const CmdStep = Schema.Struct({
  kind: Schema.Literal("cmd"),
  argv: Schema.Array(Schema.String),
  cwd: Schema.optionalKey(Schema.String),
  env: Schema.optionalKey(StringMap),
  /** Bytes of output the step accepts (default `Cmd.DEFAULT_MAX_OUTPUT_BYTES`); past it the step fails. */
  max_output_bytes: Schema.optionalKey(Schema.Int),
  ...common
})

/** @since 0.1.0 @category models */
export const AgentStep = Schema.Struct({
  kind: Schema.Literal("agent"),
  input: Json,
  model: Schema.optionalKey(Schema.String),
  tools: Schema.optionalKey(Schema.Array(Schema.String)),
  system: Schema.optionalKey(Schema.String),
  output_schema: Schema.optionalKey(Schema.Record(Schema.String, Json)),
  /** Rules by tool name for the step's calls (docs/approvals.md), joined with the workflow's `approval`. */
  approvals: Schema.optionalKey(ApprovalRules),
  ...common
})

/** @since 0.1.0 @category models */
export const HttpStep = Schema.Struct({
  kind: Schema.Literal("http"),
  method: Schema.Literals(HTTP_METHODS),
  url: Schema.String,
  headers: Schema.optionalKey(StringMap),
  body: Schema.optionalKey(Json),
  expect_status: Schema.optionalKey(Schema.Union([Schema.Int, Schema.Array(Schema.Int)])),
  /** Seconds for the whole exchange, body included (default `Http.DEFAULT_TIMEOUT_SECONDS`). */
  timeout: Schema.optionalKey(Schema.Number),
  /** Bytes of body the step accepts (default `Http.DEFAULT_MAX_BODY_BYTES`); past it the step fails. */
  max_body_bytes: Schema.optionalKey(Schema.Int),
  ...common
})

/** @since 0.1.0 @category models */
export const ToolStep = Schema.Struct({
  kind: Schema.Literal("tool"),
  id: Schema.String,
  args: Schema.optionalKey(Schema.Record(Schema.String, Json)),
  ...common
})

/** @since 0.1.0 @category models */
export interface MapStep {
  readonly kind: "map"
  readonly over: string
  readonly as: string
  readonly concurrency?: number
  readonly do: Step
  readonly needs?: ReadonlyArray<string>
  readonly when?: string
}

/** @since 0.1.0 @category models */
export type Step =
  | typeof CmdStep.Type
  | typeof AgentStep.Type
  | typeof HttpStep.Type
  | typeof ToolStep.Type
  | MapStep

/** @since 0.1.0 @category models */
export const Step: Schema.Codec<Step> = Schema.Union([
  CmdStep,
  AgentStep,
  HttpStep,
  ToolStep,
  Schema.Struct({
    kind: Schema.Literal("map"),
    over: Schema.String,
    as: Schema.String,
    concurrency: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
    do: Schema.suspend((): Schema.Codec<Step> => Step),
    ...common
  })
])

/** @since 0.1.0 @category models */
export const Document = Schema.Struct({
  name: Schema.String,
  inputs: Schema.optionalKey(Schema.Record(Schema.String, InputSpec)),
  runtime: Schema.optionalKey(Runtime),
  mcp_servers: Schema.optionalKey(Schema.Record(Schema.String, McpServerSpec)),
  /** Approval rules for every agent step (a step's own `approvals` join them). */
  approval: Schema.optionalKey(ApprovalRules),
  steps: Schema.Record(Schema.String, Step),
  output: Schema.optionalKey(Json)
})
export type Document = typeof Document.Type
