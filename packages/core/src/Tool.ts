/**
 * Tool — a typed operation an agent may call, as a plain value.
 *
 * A tool's parameters are an Effect Schema (the JSON Schema the model sees is derived from it) or
 * a raw JSON Schema (what MCP servers hand us), sent to every provider as an object at the root.
 * Arguments are decoded before `call` runs; `call` returns an Effect whose requirements `R` the
 * session must provide. The Executor runs tools; this module only describes them. It refuses, where
 * a tool is defined, a name or parameters no provider takes, and nothing a model could send: bad
 * input is decoded into a readable failure, never thrown.
 */
import { Duration, Effect, type JsonSchema, type Redacted, Schema, SchemaIssue } from "effect"
import * as JsonLimits from "./JsonLimits.ts"
import type * as Sandbox from "./Sandbox.ts"
import type { AskRefused, Asked } from "./ToolAsk.ts"
import type { Failure, Output } from "./ToolResult.ts"

export * from "./ToolAsk.ts"
export * from "./ToolResult.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** Who may invoke a tool (Anthropic's programmatic tool calling distinguishes the two). */
export type Caller = "human" | "code_execution"

/** Whether a tool's result is plain text or text plus structured data. */
export type ResultType = "text" | "structured"

/** What `call` receives besides its arguments. */
export interface Context {
  readonly sessionId: string
  /** The agent's name. */
  readonly agent: string
  /** The session's sandbox: the only way a tool should reach files and processes. */
  readonly sandbox: Sandbox.Service
  readonly cwd: string
  /** Secrets resolved at session start, for trusted tools (process env, auth headers). */
  readonly secrets: Readonly<Record<string, Redacted.Redacted<string>>>
  /**
   * The session's redaction (its secrets, then the program's `Redactor`). The executor redacts
   * every result; a tool that cuts long text calls this first, so a cut never splits a secret.
   */
  readonly redact: (text: string) => string
  /** The start-of-message assigns snapshot; every call of one message sees the same one. */
  readonly assigns: Readonly<Record<string, unknown>>
  /** The model's id for this call. */
  readonly callId: string
  /**
   * Asks a person while the call runs (before the one destructive step of a long script): the call
   * waits, durably, for the answer, as a call that asks before it runs does (its record, its
   * `ApprovalRequested` with `summary`); an approval goes on, anything else fails the call with
   * `AskRefused`, which the model reads. Only a tool declared `asks: true` may (docs/approvals.md).
   */
  readonly approve: (asked: Asked) => Effect.Effect<void, AskRefused>
}


/** The input could not be decoded; `issues` name each failing field. */
export class InvalidArguments extends Schema.TaggedError<InvalidArguments>()("InvalidArguments", {
  tool: Schema.String,
  issues: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
}) {
  override get message() {
    const issues = this.issues.map((issue) => (issue.path === "" ? issue.message : `${issue.path}: ${issue.message}`))
    return `Invalid arguments for tool ${this.tool}: ${issues.join("; ")}`
  }
}

/**
 * `make` refused a definition: a name no provider takes, or parameters no provider's wire can
 * carry (every one wants an object of named arguments). A bug in the program, thrown where the
 * tool is defined.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolDefinitionError extends Schema.TaggedError<ToolDefinitionError>()("ToolDefinitionError", {
  tool: Schema.String,
  reason: Schema.Literals(["InvalidName", "ParametersNotObject"]),
  /** The name, or the JSON Schema the parameters gave (cut at 200 characters). */
  got: Schema.String
}) {
  override get message() {
    return this.reason === "InvalidName"
      ? `Tool name ${JSON.stringify(this.tool)} must be 1-128 characters of letters, digits, _ . -`
      : `Tool ${this.tool}: parameters must describe a JSON object of named arguments (a Struct, a union of Structs, a Record), the only root every provider takes; got ${this.got}. Put the value under a key: Schema.Struct({ value: ... })`
  }
}

/**
 * What a tool may declare about approval: `true` (every call asks a person first) or a function of
 * its decoded input and context (`true`: this call asks). Session rules (`Approval.Rules`) win.
 *
 * @since 0.1.0
 * @category models
 */
export type NeedsApproval<A, R> = boolean | ((input: A, context: Context) => Effect.Effect<boolean, never, R>)

/**
 * A tool, its arguments' types erased: what agents hold and the Executor runs.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tool<out R = never> {
  readonly _tag: "Tool"
  readonly name: string
  readonly description: string
  /** The JSON Schema sent to the model: closed objects, no `$ref`. */
  readonly parameters: JsonSchema.JsonSchema
  readonly decode: (input: unknown) => Effect.Effect<unknown, InvalidArguments>
  readonly call: (args: unknown, context: Context) => Effect.Effect<Output, Failure, R>
  /** May run in parallel with neighbouring concurrent calls (default true). */
  readonly concurrent: boolean
  /** Successful text longer than this is cut 80 % head / 20 % tail (code points). */
  readonly maxResultChars: number | undefined
  readonly allowedCallers: ReadonlyArray<Caller>
  readonly resultType: ResultType
  /** Overrides the executor's per-call timeout. */
  readonly timeout: Duration.Duration | undefined
  /**
   * The call's own deadline, read from its decoded arguments (Bash's `timeout`), which the tool
   * enforces itself; the executor then waits that long plus `Executor.OWN_TIMEOUT_MARGIN`, so the
   * tool's own message (and the output so far) reaches the model rather than the executor's. Time
   * the call spends in `CallDeadline.hold` (a wait for a process permit) is not counted.
   */
  readonly timeoutOf: ((args: unknown) => Duration.Duration) | undefined
  /** Hands the session's secrets to what it runs (a process's environment): each call is audited. */
  readonly usesSecrets: boolean
  /**
   * Whether a call waits for a person's approval before it runs (`false` unless the tool says):
   * the session's rules (`Approval.Rules`) win over it.
   */
  readonly needsApproval: NeedsApproval<unknown, R>
  /**
   * It runs a child session of an agent (`Agent.asTool`): a session whose agent has one gives its
   * runs' calls what they need for it. Absent on every other tool.
   */
  readonly subAgent?: true | undefined
  /** It may ask a person while it runs (`context.approve`): its session keeps a waiting room. */
  readonly asks: boolean
  /**
   * A tool a server lists (an MCP server's), whose declaration says what a call of a tool no rule
   * allows by its exact name does (`unlisted`): ask a person, or be denied. So a tool the server
   * adds tomorrow cannot run unasked. Absent on every other tool (docs/approvals.md).
   */
  readonly discovered?: Discovered | undefined
  /**
   * Whether a call that was running when its process died runs once more when the session
   * resumes (`true`), or reads that it was interrupted (`false`, the default): docs/persistence.md.
   */
  readonly retrySafe: boolean
}

/** @since 0.1.0 @category models */
export interface Discovered {
  readonly server: string
  readonly unlisted: "ask" | "deny"
}

/** Options shared by both forms of `make`. */
export interface Options<A, E extends Failure, R> {
  readonly description: string
  readonly call: (args: A, context: Context) => Effect.Effect<Output, E, R>
  readonly concurrent?: boolean | undefined
  readonly maxResultChars?: number | undefined
  readonly allowedCallers?: ReadonlyArray<Caller> | undefined
  readonly resultType?: ResultType | undefined
  /** A fixed timeout the executor applies, or the call's own one read from its arguments (`Tool.timeoutOf`). */
  readonly timeout?: Duration.Input | ((args: A) => Duration.Input) | undefined
  /**
   * The tool hands `context.secrets` to what it runs (default false): every call then emits a
   * `SecretsUsed` event and tags its span with the names, never the values.
   */
  readonly usesSecrets?: boolean | undefined
  /**
   * Each call waits for a person's approval (`true`), or those for which this returns `true`
   * (given the decoded arguments, before the call runs). Default false. A session's rules
   * (`allow` / `ask` / `deny` by tool name) win over it: docs/approvals.md.
   */
  readonly needsApproval?: NeedsApproval<A, R> | undefined
  /**
   * Running a call twice does no harm (it reads, or sets what it sets): a call that was running
   * when its process died runs once more when the session resumes from its store. Default false:
   * such a call is answered as interrupted by a machine failure, and never runs twice.
   */
  readonly retrySafe?: boolean | undefined
  /** A call may ask a person while it runs (`context.approve`). Default false: `approve` refuses. */
  readonly asks?: boolean | undefined
}

// ---------------------------------------------------------------------------------------------
// JSON Schema derivation
// ---------------------------------------------------------------------------------------------

const SAFE = Number.MAX_SAFE_INTEGER

/**
 * Providers accept a small, plain dialect: we inline every reference, close every object, drop the
 * ±2^53 bounds `Schema.Int` adds, and turn the `anyOf [X, null]` that `Schema.optional` produces on
 * an optional key back into `X` (absence, not null, is how a model omits an argument).
 */
const clean = (schema: JsonSchema.JsonSchema, optional: boolean): JsonSchema.JsonSchema => {
  let out: Record<string, unknown> = { ...schema }
  if (optional && Array.isArray(out.anyOf)) {
    const members = (out.anyOf as Array<JsonSchema.JsonSchema>).filter((m) => m.type !== "null")
    if (members.length === 1 && members.length < out.anyOf.length) {
      const { anyOf: _, ...rest } = out
      out = { ...rest, ...members[0] }
    }
  }
  if (out.minimum === -SAFE) delete out.minimum
  if (out.maximum === SAFE) delete out.maximum
  if (out.properties !== undefined && typeof out.properties === "object") {
    const required = new Set(Array.isArray(out.required) ? (out.required as Array<string>) : [])
    out.properties = Object.fromEntries(
      Object.entries(out.properties as Record<string, JsonSchema.JsonSchema>).map(([key, value]) => [
        key,
        clean(value, !required.has(key))
      ])
    )
  }
  if (out.items !== undefined && typeof out.items === "object") out.items = clean(out.items as JsonSchema.JsonSchema, false)
  if (Array.isArray(out.anyOf)) out.anyOf = (out.anyOf as Array<JsonSchema.JsonSchema>).map((m) => clean(m, false))
  if (typeof out.additionalProperties === "object") {
    out.additionalProperties = clean(out.additionalProperties as JsonSchema.JsonSchema, false)
  }
  return out as JsonSchema.JsonSchema
}

type JsonObject = Record<string, unknown>

const isJsonObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

/** `Schema.Struct({})` encodes as "any value but null"; as parameters it means "no arguments". */
const isEmptyStruct = (schema: JsonObject): boolean =>
  Object.keys(schema).length === 1 && isJsonObject(schema.not) && schema.not.type === "null" && Object.keys(schema.not).length === 1

/**
 * One object the members of a union of objects merge into: each key with its schema (the
 * members' schemas as `anyOf` where they differ), required when every member requires it, closed
 * when every member is. Decoding still checks the union itself, and names what a combination lacks.
 */
const mergeObjects = (members: ReadonlyArray<JsonObject>, description: unknown): JsonObject => {
  const properties = new Map<string, Array<unknown>>()
  for (const member of members) {
    for (const [key, value] of Object.entries(isJsonObject(member.properties) ? member.properties : {})) {
      const seen = properties.get(key) ?? []
      if (!seen.some((s) => JSON.stringify(s) === JSON.stringify(value))) seen.push(value)
      properties.set(key, seen)
    }
  }
  const requiredBy = (member: JsonObject) => new Set(Array.isArray(member.required) ? member.required : [])
  const required = [...properties.keys()].filter((key) => members.every((member) => requiredBy(member).has(key)))
  return {
    type: "object",
    ...(description === undefined ? {} : { description }),
    properties: Object.fromEntries([...properties].map(([key, schemas]) => [key, schemas.length === 1 ? schemas[0] : { anyOf: schemas }])),
    ...(required.length === 0 ? {} : { required }),
    ...(members.every((member) => member.additionalProperties === false) ? { additionalProperties: false } : {})
  }
}

/**
 * A tool's parameters as every provider wants them: an object schema with `type: "object"` and
 * `properties` at the root (Anthropic's `input_schema`, OpenAI's function `parameters`, Gemini's
 * `parametersJsonSchema`). No arguments become an empty closed object, a union of objects one
 * merged object; `undefined` for a root no wire can carry (a string, an array, a union with one).
 */
const objectRoot = (schema: JsonObject): JsonObject | undefined => {
  if (isEmptyStruct(schema) || Object.keys(schema).length === 0) {
    return { type: "object", properties: {}, ...(isEmptyStruct(schema) ? { additionalProperties: false } : {}) }
  }
  const union = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined
  if (union !== undefined && schema.type === undefined && schema.properties === undefined) {
    const members = union.map((member) => (isJsonObject(member) ? objectRoot(member) : undefined))
    return members.every((member) => member !== undefined) ? mergeObjects(members as Array<JsonObject>, schema.description) : undefined
  }
  if (schema.type !== "object" && !(schema.type === undefined && isJsonObject(schema.properties))) return undefined
  return isJsonObject(schema.properties) && schema.type === "object" ? schema : { ...schema, type: "object", properties: schema.properties ?? {} }
}

/**
 * The JSON Schema a provider receives for a Schema's JSON encoding (an object at the root, or
 * whatever the Schema encodes to when no object can stand for it: `make` refuses those).
 *
 * @since 0.1.0
 * @category constructors
 */
export const jsonSchema = (schema: Schema.Top): JsonSchema.JsonSchema => {
  const cleaned = clean(Schema.toJsonSchemaDocument(schema, { referencePolicy: () => undefined, onExcessProperty: "error" }).schema, false)
  return (objectRoot(cleaned) ?? cleaned) as JsonSchema.JsonSchema
}

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key, i) => (typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join("")

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const schemaDecoder = (name: string, schema: Schema.Top) => {
  // The model writes JSON, so decode the JSON encoding (an optional key may then arrive as null).
  const decode = Schema.decodeUnknownEffect(Schema.toCodecJson(schema) as unknown as Schema.Decoder<unknown>)
  return (input: unknown) =>
    Effect.mapError(decode(input, { errors: "all", onExcessProperty: "error" }), (error) =>
      new InvalidArguments({
        tool: name,
        issues: formatIssues(error.issue).issues.map((issue) => ({
          path: formatPath((issue.path ?? []).map((p) => (typeof p === "object" ? p.key : p))),
          message: issue.message
        }))
      }))
}

/** Raw JSON Schema: we check the shape and the required keys; the tool validates the rest. */
const jsonSchemaDecoder = (name: string, schema: JsonSchema.JsonSchema) => {
  const required = Array.isArray(schema.required) ? (schema.required as Array<string>) : []
  return (input: unknown): Effect.Effect<unknown, InvalidArguments> => {
    if (typeof input !== "object" || input === null || Array.isArray(input)) {
      return Effect.fail(
        new InvalidArguments({ tool: name, issues: [{ path: "", message: `Expected a JSON object, got ${JSON.stringify(input) ?? "nothing"}` }] })
      )
    }
    const missing = required.filter((key) => !(key in input))
    return missing.length === 0
      ? Effect.succeed(input)
      : Effect.fail(new InvalidArguments({ tool: name, issues: missing.map((path) => ({ path, message: "Missing key" })) }))
  }
}

/**
 * Arguments past `JsonLimits`, or a message's stand-in for them (`Model.toMessage`), are refused
 * before a decoder walks them: the model reads which bound.
 */
const bounded = (name: string, decode: (input: unknown) => Effect.Effect<unknown, InvalidArguments>) => (input: unknown) => {
  const why = JsonLimits.refusal(input) ?? JsonLimits.check(input)?.description
  if (why === undefined) return decode(input)
  const message = `the arguments hold ${why}, past what a tool takes; call ${name} again with flatter, smaller arguments`
  return Effect.fail(new InvalidArguments({ tool: name, issues: [{ path: "", message }] }))
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

const validName = /^[a-zA-Z0-9_.-]{1,128}$/

// `call` gets the decoded arguments, and so does this: the executor decodes before asking.
const ownTimeout = (of: (args: never) => Duration.Input) => (args: unknown): Duration.Duration =>
  Duration.fromInputUnsafe(of(args as never))

/**
 * Defines a tool. With a Schema, `call` receives the decoded arguments typed; with a raw JSON
 * Schema, it receives the JSON object after a shape check.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: {
  <S extends Schema.Top & { readonly DecodingServices: never }, E extends Failure = never, R = never>(
    name: string,
    options: Options<S["Type"], E, R> & { readonly parameters: S }
  ): Tool<R>
  <E extends Failure = never, R = never>(
    name: string,
    options: Options<Readonly<Record<string, unknown>>, E, R> & { readonly parameters: JsonSchema.JsonSchema }
  ): Tool<R>
} = (
  name: string,
  options: Options<never, Failure, unknown> & { readonly parameters: Schema.Top | JsonSchema.JsonSchema }
): Tool<never> => {
  if (!validName.test(name)) throw new ToolDefinitionError({ tool: name, reason: "InvalidName", got: name })
  const isSchema = Schema.isSchema(options.parameters)
  const given = isSchema ? jsonSchema(options.parameters) : options.parameters
  const parameters = objectRoot(given as JsonObject)
  if (parameters === undefined) {
    throw new ToolDefinitionError({ tool: name, reason: "ParametersNotObject", got: JSON.stringify(given).slice(0, 200) })
  }
  return {
    _tag: "Tool",
    name,
    description: options.description,
    parameters: parameters as JsonSchema.JsonSchema,
    decode: bounded(name, isSchema ? schemaDecoder(name, options.parameters) : jsonSchemaDecoder(name, options.parameters)),
    call: options.call as Tool<never>["call"],
    concurrent: options.concurrent ?? true,
    maxResultChars: options.maxResultChars,
    allowedCallers: options.allowedCallers ?? ["human"],
    resultType: options.resultType ?? "text",
    timeout: options.timeout === undefined || typeof options.timeout === "function"
      ? undefined
      : Duration.fromInputUnsafe(options.timeout),
    timeoutOf: typeof options.timeout === "function" ? ownTimeout(options.timeout) : undefined,
    usesSecrets: options.usesSecrets ?? false,
    needsApproval: (options.needsApproval ?? false) as NeedsApproval<unknown, never>,
    retrySafe: options.retrySafe ?? false,
    asks: options.asks ?? false
  }
}
