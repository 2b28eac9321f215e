/**
 * Inputs — the values a run is given, checked against the workflow's `input` blocks as Condukt
 * does: a JSON Schema object (declared properties with their `type`, `enum` and `items`; the ones
 * without a `default` required; no others allowed), defaults filled first. The schema is imported
 * with Effect's JSON Schema importer, so the checking is Schema's, not ours.
 */
import { Effect, JsonSchema, Result, Schema, SchemaIssue, SchemaRepresentation } from "effect"
import type * as Document from "./Document.ts"
import type * as Expression from "./Expression.ts"
import { WorkflowFailed } from "./WorkflowError.ts"

const invalid = (detail: string) => new WorkflowFailed({ reason: "InvalidInputs", step: "", detail })

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

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
    const properties: Record<string, JsonSchema.JsonSchema> = {}
    const filled: Record<string, unknown> = { ...given }
    for (const [id, spec] of Object.entries(specs)) {
      const { default: fallback, description: _, ...schema } = spec
      properties[id] = schema as JsonSchema.JsonSchema
      if (fallback !== undefined && !Object.hasOwn(filled, id)) filled[id] = fallback
    }
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
    const schema = yield* Effect.try({
      try: () =>
        SchemaRepresentation.fromJsonSchemaDocument(
          JsonSchema.fromSchemaDraft2020_12({ type: "object", properties, required, additionalProperties: false })
        ),
      catch: (cause) => invalid(`the input declarations cannot be checked: ${cause instanceof Error ? cause.message : String(cause)}`)
    })
    const decoded = Schema.decodeUnknownResult(schema as Schema.Decoder<unknown>)(filled, { errors: "all", onExcessProperty: "error" })
    if (Result.isFailure(decoded)) {
      const issues = formatIssues(decoded.failure.issue).issues.map((issue) => {
        const path = (issue.path ?? []).map((p) => String(typeof p === "object" ? p.key : p)).join(".")
        return path === "" ? issue.message : `${path}: ${issue.message}`
      })
      return yield* invalid(`inputs do not match their declarations: ${issues.join("; ")}`)
    }
    return filled as Readonly<Record<string, Expression.Value>>
  })
