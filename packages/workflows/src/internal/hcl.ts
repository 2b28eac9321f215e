/**
 * hcl — the one door to HashiCorp's HCL parser (Go, compiled to WASM, `@cdktn/hcl2json`): a file
 * to its JSON form, and an expression to its syntax tree. Promise APIs enter here through
 * `Effect.tryPromise`; nothing else in the package touches the parser.
 */
import { getExpressionAst, parse, type TFExpressionSyntaxTree } from "@cdktn/hcl2json"
import { Effect, Schema } from "effect"

/** The parser refused the text; `text` is its diagnostic, `file:line,col-…: Summary; detail`. */
export class HclParseError extends Schema.TaggedError<HclParseError>()("HclParseError", { text: Schema.String }) {}

const textOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** The JSON form of an HCL file: blocks as `{ type: { label: [body] } }`, expressions as `${…}` strings. */
export const toJson = (filename: string, source: string): Effect.Effect<Record<string, unknown>, HclParseError> =>
  Effect.tryPromise({ try: () => parse(filename, source), catch: (cause) => new HclParseError({ text: textOf(cause) }) })

/** The syntax tree of one HCL template string (`"a ${x}"`), quoted as HCL wants it. */
export const templateAst = (
  template: string
): Effect.Effect<TFExpressionSyntaxTree.ExpressionType | null, HclParseError> =>
  Effect.tryPromise({
    // Quotes inside `${…}` stay as they are (HCL reads them as the expression's own strings).
    try: () => getExpressionAst("expression.hcl", `"${template.replaceAll("\n", "\\n").replaceAll("\r", "\\r")}"`),
    catch: (cause) => new HclParseError({ text: textOf(cause) })
  })

export type SyntaxNode = TFExpressionSyntaxTree.ExpressionType
