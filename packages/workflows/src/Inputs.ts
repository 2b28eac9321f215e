/**
 * Inputs — the values a run is given, checked against the workflow's `input` blocks as Condukt
 * does: a JSON Schema object (declared properties with their `type`, `enum` and `items`; the ones
 * without a `default` required; no others allowed), defaults filled first. The schema is imported
 * with Effect's JSON Schema importer, so the checking is Schema's, not ours; an input that breaks
 * its declaration is named with the value it got (`env: got "qa", expected "dev" | "prod"`). Each
 * value is first held to `JsonLimits` (nesting, keys, strings), whoever passed it: the CLI, a
 * program, a durable run's journal. A read of an input no block declares is refused before the
 * first step (`checkReads`), the nearest declared one named.
 */
import { Effect, JsonSchema, Result, Schema, SchemaIssue, SchemaRepresentation } from "effect"
import * as JsonLimits from "@condukt/core/JsonLimits"
import type * as Document from "./Document.ts"
import * as Expression from "./Expression.ts"
import { didYouMean } from "./internal/nearest.ts"
import * as Template from "./Template.ts"
import { WorkflowFailed } from "./WorkflowError.ts"

const invalid = (description: string) => new WorkflowFailed({ reason: "InvalidInputs", step: "", description })

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** The value at `keys` inside `root`, when there is one. */
const valueAt = (root: unknown, keys: ReadonlyArray<PropertyKey>): { readonly value: Expression.Value } | undefined => {
  let at: unknown = root
  for (const key of keys) {
    if (typeof at !== "object" || at === null || !Object.hasOwn(at, key)) return undefined
    at = (at as Readonly<Record<PropertyKey, unknown>>)[key]
  }
  return { value: at as Expression.Value }
}

/** `values` checked against the declarations (`required` of them must be there), or why not. */
const decode = (
  specs: Readonly<Record<string, Document.InputSpec>>,
  values: Readonly<Record<string, unknown>>,
  required: ReadonlyArray<string>,
  what: string
) =>
  Effect.gen(function*() {
    // Built with fromEntries, never by assignment: an input named __proto__ stays a plain key.
    const properties = Object.fromEntries(
      Object.entries(specs).map(([id, spec]) => {
        const { default: _, description: __, ...schema } = spec
        return [id, schema as JsonSchema.JsonSchema]
      })
    )
    const schema = yield* Effect.try({
      try: () =>
        SchemaRepresentation.fromJsonSchemaDocument(
          JsonSchema.fromSchemaDraft2020_12({ type: "object", properties, required: [...required], additionalProperties: false })
        ),
      catch: (cause) => invalid(`the input declarations cannot be checked: ${cause instanceof Error ? cause.message : String(cause)}`)
    })
    const decoded = Schema.decodeUnknownResult(schema as Schema.Decoder<unknown>)(values, { errors: "all", onExcessProperty: "error" })
    if (Result.isFailure(decoded)) {
      const issues = formatIssues(decoded.failure.issue).issues.map((issue) => {
        const keys = (issue.path ?? []).map((p) => (typeof p === "object" ? p.key : p))
        const path = keys.map(String).join(".")
        // Name the value given beside what was expected: `env: got "qa", expected "dev" | "prod"`.
        const got = valueAt(values, keys)
        const message = got !== undefined && issue.message.startsWith("Expected ")
          ? `got ${Expression.show(got.value)}, expected ${issue.message.slice("Expected ".length)}`
          : issue.message
        return path === "" ? message : `${path}: ${message}`
      })
      return yield* invalid(`${what} do not match their declarations: ${issues.join("; ")}`)
    }
  })

/**
 * The inputs with defaults filled in, or why they do not fit the declarations.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolve = (
  specs: Readonly<Record<string, Document.InputSpec>>,
  given: Readonly<Record<string, unknown>>
): Effect.Effect<Readonly<Record<string, Expression.Value>>, WorkflowFailed> =>
  Effect.gen(function*() {
    const defaults = Object.entries(specs).filter(([id, spec]) => spec.default !== undefined && !Object.hasOwn(given, id))
    const filled = Object.fromEntries([...Object.entries(given), ...defaults.map(([id, spec]) => [id, spec.default] as const)])
    const extra = Object.keys(given).filter((key) => !Object.hasOwn(specs, key)).sort()
    if (extra.length > 0) {
      const declared = Object.keys(specs).sort()
      return yield* invalid(
        `unknown input${extra.length === 1 ? "" : "s"} ${extra.join(", ")}; this workflow takes ${declared.length === 0 ? "no inputs" : declared.join(", ")}`
      )
    }
    const required = Object.entries(specs).filter(([, spec]) => spec.default === undefined).map(([id]) => id).sort()
    const missing = required.filter((id) => !Object.hasOwn(filled, id))
    if (missing.length > 0) return yield* invalid(`missing required input${missing.length === 1 ? "" : "s"} ${missing.join(", ")}`)
    // Before Schema walks them: a value nested 100,000 deep would overflow its stack (JsonLimits).
    for (const [id, value] of Object.entries(given)) {
      const refused = JsonLimits.check(value)
      if (refused !== undefined) return yield* invalid(`input ${id} holds ${refused.description}, past what an input may be; pass a smaller value`)
    }
    yield* decode(specs, filled, required, "inputs")
    return filled as Readonly<Record<string, Expression.Value>>
  })

/**
 * Succeeds when the declarations can check inputs and every `default` fits its own declaration:
 * what `resolve` would find wrong with them whatever the inputs (`condukt check` runs it).
 *
 * @since 0.1.0
 * @category constructors
 */
export const checkDeclarations = (specs: Readonly<Record<string, Document.InputSpec>>): Effect.Effect<void, WorkflowFailed> =>
  decode(
    specs,
    Object.fromEntries(Object.entries(specs).filter(([, spec]) => spec.default !== undefined).map(([id, spec]) => [id, spec.default])),
    [],
    "input defaults"
  )

/**
 * Succeeds when every `inputs.<name>` a step or the output reads is declared; else the first
 * that is not (steps in id order, then `output`), as a `WorkflowFailed` of reason `UnknownMember`
 * naming the step that reads it ("" for `output`) and the nearest declared input. An undeclared
 * input is refused when a run is given it, so a read of one could only fail the run midway. A map
 * binding named `inputs` hides the workflow's inside its step.
 *
 * @since 0.1.0
 * @category constructors
 */
export const checkReads = (document: Document.Document): Result.Result<void, WorkflowFailed> => {
  const declared = Object.keys(document.inputs ?? {})
  const readers: ReadonlyArray<readonly [string, unknown]> = [
    ...Object.keys(document.steps).sort().map((id) => [id, document.steps[id]] as const),
    ["", document.output ?? null]
  ]
  for (const [reader, value] of readers) {
    const step = value as Document.Step | null
    if (step !== null && typeof step === "object" && "kind" in step && step.kind === "map" && step.as === "inputs") continue
    const unknown = Template.inputReads(value).find((name) => !Object.hasOwn(document.inputs ?? {}, name))
    if (unknown === undefined) continue
    const near = didYouMean(unknown, declared)
    const hint = near !== "" ? near : declared.length === 0 ? "; it declares no inputs: add an input block" : `; it declares ${[...declared].sort().join(", ")}`
    const description = `${reader === "" ? "output " : ""}reads inputs.${unknown}, which is not an input of this workflow${hint}`
    return Result.fail(new WorkflowFailed({ reason: "UnknownMember", step: reader, description }))
  }
  return Result.void
}
