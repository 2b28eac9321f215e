/**
 * hcl — the one door to HashiCorp's HCL parser (Go, compiled to WASM, `@cdktn/hcl2json`): a file
 * to its JSON form, and an expression to its syntax tree. Promise APIs enter here through
 * `Effect.tryPromise`; nothing else in the package touches the parser. The parser recurses on
 * nesting and overflows the JS stack on a few thousand parentheses (a bare `Maximum call stack
 * size exceeded`, or a silent exit), so a source nested deeper than `MAX_NESTING` never reaches it.
 */
import { getExpressionAst, parse, type TFExpressionSyntaxTree } from "@cdktn/hcl2json"
import { Effect, Schema } from "effect"

/** The parser refused the text; `text` is its diagnostic, `file:line,col-…: Summary; detail`. */
export class HclParseError extends Schema.TaggedError<HclParseError>()("HclParseError", { text: Schema.String }) {}

/** The source nests brackets, braces or `${…}` deeper than `MAX_NESTING` at `line`:`column`. */
export class HclTooDeep extends Schema.TaggedError<HclTooDeep>()("HclTooDeep", { line: Schema.Number, column: Schema.Number }) {}

/** How deep `( [ {` and `${ %{` may nest in a file: far beyond any workflow, far below a stack overflow. */
export const MAX_NESTING = 256

/**
 * Where the source first nests deeper than `max`, or undefined. A small lexer: comments are
 * skipped and the literal text of quoted strings does not count, their `${…}` does (heredoc
 * bodies are counted as code: a bracket there only adds depth, never hides it).
 */
export const tooDeep = (source: string, max: number = MAX_NESTING): { readonly line: number; readonly column: number } | undefined => {
  // Each open frame is a bracket (closed by the matching character) or an interpolation (closed
  // by `}`, back into its string); `inString` is true between quotes at the current level.
  const frames: Array<"bracket" | "interpolation"> = []
  let inString = false
  let line = 1
  let lineStart = 0
  let i = 0
  while (i < source.length) {
    const c = source[i]!
    if (c === "\n") {
      line++
      lineStart = i + 1
      i++
      continue
    }
    if (inString) {
      if (c === "\\") {
        i += 2
      } else if (c === "\"") {
        inString = false
        i++
      } else if (source.startsWith("$${", i) || source.startsWith("%%{", i)) {
        i += 3
      } else if ((c === "$" || c === "%") && source[i + 1] === "{") {
        frames.push("interpolation")
        inString = false
        if (frames.length > max) return { line, column: i - lineStart + 1 }
        i += 2
      } else {
        i++
      }
      continue
    }
    if (c === "#" || (c === "/" && source[i + 1] === "/")) {
      while (i < source.length && source[i] !== "\n") i++
    } else if (c === "/" && source[i + 1] === "*") {
      const end = source.indexOf("*/", i + 2)
      const stop = end === -1 ? source.length : end + 2
      for (let j = i; j < stop; j++) {
        if (source[j] === "\n") {
          line++
          lineStart = j + 1
        }
      }
      i = stop
    } else if (c === "\"") {
      inString = true
      i++
    } else if (c === "(" || c === "[" || c === "{") {
      frames.push("bracket")
      if (frames.length > max) return { line, column: i - lineStart + 1 }
      i++
    } else if (c === ")" || c === "]" || c === "}") {
      // A `}` closing an interpolation goes back into its string.
      if (frames.pop() === "interpolation") inString = true
      i++
    } else {
      i++
    }
  }
  return undefined
}

const textOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** The JSON form of an HCL file: blocks as `{ type: { label: [body] } }`, expressions as `${…}` strings. */
export const toJson = (filename: string, source: string): Effect.Effect<Record<string, unknown>, HclParseError | HclTooDeep> =>
  Effect.suspend((): Effect.Effect<Record<string, unknown>, HclParseError | HclTooDeep> => {
    const deep = tooDeep(source)
    return deep !== undefined
      ? Effect.fail(new HclTooDeep(deep))
      : Effect.tryPromise({ try: () => parse(filename, source), catch: (cause) => new HclParseError({ text: textOf(cause) }) })
  })

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
