/**
 * hcl — the one door to HashiCorp's HCL parser (Go, compiled to WASM, `@cdktn/hcl2json`, started
 * by `hclParser` on the first parse): a file to its JSON form, and an expression to its syntax
 * tree. Promise APIs enter here through `Effect.tryPromise`; nothing else in the package touches
 * the parser. The parser recurses on nesting and overflows the JS stack on a few thousand
 * parentheses (a bare `Maximum call stack size exceeded`, or a silent exit), so a source nested
 * deeper than `MAX_NESTING` never reaches it.
 */
import type { TFExpressionSyntaxTree } from "@cdktn/hcl2json"
import { Effect, Schema } from "effect"
import * as HclParser from "./hclParser.ts"

/** The parser refused the text; `text` is its diagnostic, `file:line,col-…: Summary; detail`. */
export class HclParseError extends Schema.TaggedError<HclParseError>()("HclParseError", { text: Schema.String }) {}

/** The source nests brackets, braces or `${…}` deeper than `MAX_NESTING` at `line`:`column`. */
export class HclTooDeep extends Schema.TaggedError<HclTooDeep>()("HclTooDeep", { line: Schema.Number, column: Schema.Number }) {}

/** How deep `( [ {` and `${ %{` may nest in a file: far beyond any workflow, far below a stack overflow. */
export const MAX_NESTING = 256

/** Where the lexer is: code, the text of a quoted string, or the text of a heredoc ending at `marker`. */
type Mode = { readonly kind: "code" } | { readonly kind: "quoted" } | { readonly kind: "heredoc"; readonly marker: string }

const CODE: Mode = { kind: "code" }
const QUOTED: Mode = { kind: "quoted" }
const HEREDOC = /^<<-?([A-Za-z_][A-Za-z0-9_-]*)\r?\n/

/**
 * Where the source first nests deeper than `max`, or undefined. A small lexer: comments are
 * skipped and the literal text of quoted strings and heredocs does not count; brackets, braces
 * and the `${…}`/`%{…}` inside templates do.
 */
export const tooDeep = (source: string, max: number = MAX_NESTING): { readonly line: number; readonly column: number } | undefined => {
  // Each open frame is a bracket (closed by the matching character, back to code) or an
  // interpolation (closed by `}`, back to the string or heredoc it opened in).
  const frames: Array<Mode | "bracket"> = []
  let mode: Mode = CODE
  let line = 1
  let lineStart = 0
  let i = 0
  const open = (frame: Mode | "bracket") => {
    frames.push(frame)
    return frames.length > max ? { line, column: i - lineStart + 1 } : undefined
  }
  while (i < source.length) {
    const c = source[i]!
    if (c === "\n") {
      line++
      lineStart = i + 1
      i++
      if (mode.kind === "heredoc") {
        const end = source.indexOf("\n", i)
        if (source.slice(i, end === -1 ? source.length : end).trim() === mode.marker) mode = CODE
      }
      continue
    }
    if (mode.kind !== "code") {
      if (c === "\\" && mode.kind === "quoted") {
        i += 2
      } else if (c === "\"" && mode.kind === "quoted") {
        mode = CODE
        i++
      } else if (source.startsWith("$${", i) || source.startsWith("%%{", i)) {
        i += 3
      } else if ((c === "$" || c === "%") && source[i + 1] === "{") {
        const deep = open(mode)
        if (deep !== undefined) return deep
        mode = CODE
        i += 2
      } else {
        i++
      }
      continue
    }
    const heredoc = c === "<" ? HEREDOC.exec(source.slice(i, i + 260)) : null
    if (heredoc !== null) {
      mode = { kind: "heredoc", marker: heredoc[1]! }
      i += heredoc[0].length - 1 // onto the newline, which counts the line
    } else if (c === "#" || (c === "/" && source[i + 1] === "/")) {
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
      mode = QUOTED
      i++
    } else if (c === "(" || c === "[" || c === "{") {
      const deep = open("bracket")
      if (deep !== undefined) return deep
      i++
    } else if (c === ")" || c === "]" || c === "}") {
      const frame = frames.pop()
      if (frame !== undefined && frame !== "bracket") mode = frame
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
      : Effect.tryPromise({
        try: async () => JSON.parse(await HclParser.call("parse", filename, source)) as Record<string, unknown>,
        catch: (cause) => new HclParseError({ text: textOf(cause) })
      })
  })

/** The syntax tree of one HCL template string (`"a ${x}"`), quoted as HCL wants it. */
export const templateAst = (
  template: string
): Effect.Effect<TFExpressionSyntaxTree.ExpressionType | null, HclParseError> =>
  Effect.tryPromise({
    // Quotes inside `${…}` stay as they are (HCL reads them as the expression's own strings).
    try: async () => {
      const text = await HclParser.call("getExpressionAst", "expression.hcl", `"${template.replaceAll("\n", "\\n").replaceAll("\r", "\\r")}"`)
      return (JSON.parse(text) as TFExpressionSyntaxTree.ExpressionType | null) || null
    },
    catch: (cause) => new HclParseError({ text: textOf(cause) })
  })

export type SyntaxNode = TFExpressionSyntaxTree.ExpressionType
