/**
 * Template — strings with `${…}` placeholders, and the values of a document that hold them.
 *
 * A string that is exactly one placeholder keeps its value's type (`"${steps.a.ok}"` is a
 * boolean); any other string is the concatenation of its text and its placeholders stringified
 * (`null` → "", numbers and booleans as written, lists and objects as JSON). `$${` is a literal
 * `${`, as in HCL. A placeholder may end with a formatter, `:json` or `:csv`. Objects and lists
 * are interpolated leaf by leaf. Refuses: anything the expression language refuses.
 */
import { Result } from "effect"
import * as Expression from "./Expression.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export interface Placeholder {
  readonly node: Expression.Node
  readonly formatter: string | undefined
  readonly tokens: ReadonlyArray<Expression.Token>
}

/** A parsed string: its literal text and its placeholders, in order. */
export interface Template {
  readonly source: string
  readonly parts: ReadonlyArray<string | Placeholder>
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * Parses a string into literal text and placeholders.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parse = (source: string): Result.Result<Template, Expression.ExpressionError> => {
  const parts: Array<string | Placeholder> = []
  let text = ""
  let i = 0
  while (i < source.length) {
    if (source.startsWith("$${", i)) {
      text += "${"
      i += 3
    } else if (source.startsWith("${", i)) {
      const scanned = Expression.scan(source, i + 2, true)
      if (Result.isFailure(scanned)) return Result.fail(scanned.failure)
      const parsed = Expression.parseTokens(scanned.success.tokens, source)
      if (Result.isFailure(parsed)) return Result.fail(parsed.failure)
      const formatter = parsed.success.formatter
      if (formatter !== undefined && formatter !== "json" && formatter !== "csv") {
        return Result.fail(new Expression.ExpressionError({ reason: "UnknownFormatter", description: formatter, source }))
      }
      if (text !== "") parts.push(text)
      text = ""
      parts.push({ ...parsed.success, tokens: scanned.success.tokens })
      i = scanned.success.end + 1
    } else {
      text += source[i]
      i++
    }
  }
  if (text !== "") parts.push(text)
  return Result.succeed({ source, parts })
}

/** Whether a string holds a placeholder at all (a fast path for plain strings). */
export const hasPlaceholder = (source: string): boolean => source.includes("${")

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

/** How a value reads inside a longer string. */
export const stringify = (value: Expression.Value): string =>
  value === null ? "" : typeof value === "string" ? value : typeof value === "object" ? JSON.stringify(value) : String(value)

const csvField = (value: Expression.Value): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value)
  return /[",\r\n]/.test(text) ? `"${text.replaceAll("\"", "\"\"")}"` : text
}

const format = (
  value: Expression.Value,
  formatter: string | undefined,
  source: string
): Result.Result<Expression.Value, Expression.ExpressionError> => {
  if (formatter === undefined) return Result.succeed(value)
  if (formatter === "json") return Result.succeed(JSON.stringify(value))
  if (formatter === "csv") {
    return Array.isArray(value)
      ? Result.succeed(value.map(csvField).join(","))
      : Result.fail(new Expression.ExpressionError({ reason: "CsvRequiresList", description: Expression.show(value), source }))
  }
  return Result.fail(new Expression.ExpressionError({ reason: "UnknownFormatter", description: formatter, source }))
}

/**
 * A template's value: a lone placeholder keeps its type, anything else is a string.
 *
 * @since 0.1.0
 * @category combinators
 */
export const render = (
  template: Template,
  scope: Readonly<Record<string, Expression.Value>>
): Result.Result<Expression.Value, Expression.ExpressionError> => {
  const evaluate = (part: Placeholder) =>
    Result.flatMap(Expression.evaluate(part.node, scope, template.source), (value) => format(value, part.formatter, template.source))
  if (template.parts.length === 1 && typeof template.parts[0] !== "string") return evaluate(template.parts[0]!)
  let out = ""
  for (const part of template.parts) {
    if (typeof part === "string") {
      out += part
    } else {
      const value = evaluate(part)
      if (Result.isFailure(value)) return value
      out += stringify(value.success)
    }
  }
  return Result.succeed(out)
}

/**
 * Interpolates every string of a JSON value, parsing each through `parseCached` (a run parses a
 * document's strings once).
 *
 * @since 0.1.0
 * @category combinators
 */
export const interpolate = (
  value: unknown,
  scope: Readonly<Record<string, Expression.Value>>,
  parseCached: (source: string) => Result.Result<Template, Expression.ExpressionError> = parse
): Result.Result<Expression.Value, Expression.ExpressionError> => {
  if (typeof value === "string") {
    if (!hasPlaceholder(value)) return Result.succeed(value)
    return Result.flatMap(parseCached(value), (template) => render(template, scope))
  }
  if (Array.isArray(value)) {
    const out: Array<Expression.Value> = []
    for (const item of value) {
      const done = interpolate(item, scope, parseCached)
      if (Result.isFailure(done)) return done
      out.push(done.success)
    }
    return Result.succeed(out)
  }
  if (typeof value === "object" && value !== null) {
    const out: Record<string, Expression.Value> = {}
    for (const [key, item] of Object.entries(value)) {
      const done = interpolate(item, scope, parseCached)
      if (Result.isFailure(done)) return done
      out[key] = done.success
    }
    return Result.succeed(out)
  }
  return Result.succeed(value as Expression.Value)
}

// ---------------------------------------------------------------------------------------------
// Analysis
// ---------------------------------------------------------------------------------------------

/** Calls `visit` on `node` and every node inside it. */
const eachNode = (node: Expression.Node, visit: (node: Expression.Node) => void): void => {
  visit(node)
  switch (node._tag) {
    case "Member":
      return eachNode(node.object, visit)
    case "Index":
      eachNode(node.object, visit)
      return eachNode(node.index, visit)
    case "Not":
    case "Negate":
      return eachNode(node.operand, visit)
    case "Compare":
    case "And":
    case "Or":
      eachNode(node.left, visit)
      return eachNode(node.right, visit)
    default:
      return
  }
}

/** Calls `visit` on every node of every placeholder in every string `value` holds; strings that do not parse are skipped (validation reports them). */
const eachPlaceholderNode = (value: unknown, visit: (node: Expression.Node) => void): void => {
  if (typeof value === "string") {
    if (!hasPlaceholder(value)) return
    const parsed = parse(value)
    if (Result.isSuccess(parsed)) {
      for (const part of parsed.success.parts) if (typeof part !== "string") eachNode(part.node, visit)
    }
  } else if (Array.isArray(value)) {
    for (const item of value) eachPlaceholderNode(item, visit)
  } else if (typeof value === "object" && value !== null) {
    for (const item of Object.values(value)) eachPlaceholderNode(item, visit)
  }
}

/** `steps.<id>`: the id, else undefined. */
const stepOf = (node: Expression.Node): string | undefined =>
  node._tag === "Member" && node.object._tag === "Identifier" && node.object.name === "steps" ? node.name : undefined

/**
 * The input names a value reads as `inputs.<name>` or `inputs["<name>"]`, in every string it
 * holds, sorted and unique.
 *
 * @since 0.1.0
 * @category combinators
 */
export const inputReads = (value: unknown): ReadonlyArray<string> => {
  const found = new Set<string>()
  const isInputs = (node: Expression.Node) => node._tag === "Identifier" && node.name === "inputs"
  eachPlaceholderNode(value, (node) => {
    if (node._tag === "Member" && isInputs(node.object)) found.add(node.name)
    else if (node._tag === "Index" && isInputs(node.object) && node.index._tag === "Literal" && typeof node.index.value === "string") {
      found.add(node.index.value)
    }
  })
  return [...found].sort()
}

/**
 * The step ids a value refers to as `steps.<id>`, in every string it holds, sorted and unique.
 * Strings that do not parse contribute nothing (validation reports them).
 *
 * @since 0.1.0
 * @category combinators
 */
export const references = (value: unknown): ReadonlyArray<string> => {
  const found = new Set<string>()
  eachPlaceholderNode(value, (node) => {
    const step = stepOf(node)
    if (step !== undefined) found.add(step)
  })
  return [...found].sort()
}

/**
 * The root identifiers a value's placeholders use (`inputs`, `steps`, a map binding), sorted and unique.
 *
 * @since 0.1.0
 * @category combinators
 */
export const roots = (value: unknown): ReadonlyArray<string> => {
  const found = new Set<string>()
  eachPlaceholderNode(value, (node) => {
    if (node._tag === "Identifier") found.add(node.name)
  })
  return [...found].sort()
}

/**
 * The members a value reads of step outputs (`steps.a.stdout`, `steps.a["stdout"]`), in order of
 * appearance, repeats included.
 *
 * @since 0.1.0
 * @category combinators
 */
export const stepMembers = (value: unknown): ReadonlyArray<{ readonly step: string; readonly member: string }> => {
  const found: Array<{ readonly step: string; readonly member: string }> = []
  eachPlaceholderNode(value, (node) => {
    if (node._tag === "Member") {
      const step = stepOf(node.object)
      if (step !== undefined) found.push({ step, member: node.name })
    } else if (node._tag === "Index" && node.index._tag === "Literal" && typeof node.index.value === "string") {
      const step = stepOf(node.object)
      if (step !== undefined) found.push({ step, member: node.index.value })
    }
  })
  return found
}

/**
 * Renames root identifiers inside placeholders (`input.x` → `inputs.x`), leaving member names,
 * string literals and the text around placeholders as they are.
 *
 * @since 0.1.0
 * @category combinators
 */
export const renameRoots = (
  source: string,
  renames: Readonly<Record<string, string>>
): Result.Result<string, Expression.ExpressionError> =>
  Result.map(parse(source), (template) => {
    const edits: Array<{ readonly start: number; readonly end: number; readonly text: string }> = []
    for (const part of template.parts) {
      if (typeof part === "string") continue
      part.tokens.forEach((token, i) => {
        const before = part.tokens[i - 1]
        const afterDot = before !== undefined && before.kind === "op" && before.text === "."
        if (token.kind === "ident" && !afterDot && Object.hasOwn(renames, token.text)) {
          edits.push({ start: token.start, end: token.end, text: renames[token.text]! })
        }
      })
    }
    let out = source
    for (const edit of edits.reverse()) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end)
    return out
  })
