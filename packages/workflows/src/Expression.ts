/**
 * Expression — the language inside one `${…}` placeholder: scanning, parsing and evaluation.
 *
 * Identifiers (`inputs`, `steps`, map bindings), member access (`a.b`), indexing (`xs[0]`,
 * `xs[-1]`, `obj["a key"]`), comparisons (`== != < <= > >=`, one per level, not chained), `&& || !`,
 * unary `-`, parentheses and literals (double-quoted strings with `\" \\ \n \t \r`, integers,
 * floats, `true false null`). Nothing else: no calls, no arithmetic, no conditionals. Parsing is
 * pure and total (a typed `ExpressionError`, never a throw); evaluation reads a scope of JSON
 * values and never mutates it. Placeholders, formatters and templates live in `Template.ts`.
 */
import { Result, Schema } from "effect"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** A JSON value, as inputs, step outputs and expression results are. */
export type Value = null | boolean | number | string | ReadonlyArray<Value> | { readonly [key: string]: Value }

/** @since 0.1.0 @category models */
export type Comparison = "==" | "!=" | "<" | "<=" | ">" | ">="

/** The parsed expression. */
export type Node =
  | { readonly _tag: "Literal"; readonly value: Value }
  | { readonly _tag: "Identifier"; readonly name: string }
  | { readonly _tag: "Member"; readonly object: Node; readonly name: string }
  | { readonly _tag: "Index"; readonly object: Node; readonly index: Node }
  | { readonly _tag: "Not"; readonly operand: Node }
  | { readonly _tag: "Negate"; readonly operand: Node }
  | { readonly _tag: "Compare"; readonly op: Comparison; readonly left: Node; readonly right: Node }
  | { readonly _tag: "And" | "Or"; readonly left: Node; readonly right: Node }

/**
 * What went wrong in an expression, as a fact; `description` names the offending part.
 *
 * @since 0.1.0
 * @category errors
 */
export const Reasons = [
  "UnclosedPlaceholder",
  "UnterminatedString",
  "UnexpectedChar",
  "TrailingTokens",
  "MissingRbracket",
  "MissingRparen",
  "UndefinedIdentifier",
  "UndefinedMember",
  "NotAnObject",
  "IndexOutOfRange",
  "UndefinedKey",
  "InvalidIndex",
  "IncompatibleCompare",
  "NotANumber",
  "CsvRequiresList",
  "UnknownFormatter",
  "TooDeep"
] as const

/** @since 0.1.0 @category errors */
export type Reason = typeof Reasons[number]

const explain: Record<Reason, string> = {
  UnclosedPlaceholder: "a placeholder is not closed with }",
  UnterminatedString: "a string literal is not closed with \"",
  UnexpectedChar: "unexpected character",
  TrailingTokens: "unexpected text after the expression",
  MissingRbracket: "an index is not closed with ]",
  MissingRparen: "a parenthesis is not closed with )",
  UndefinedIdentifier: "undefined identifier",
  UndefinedMember: "no such member",
  NotAnObject: "member access on a value that is not an object",
  IndexOutOfRange: "index out of range",
  UndefinedKey: "no such key",
  InvalidIndex: "invalid index",
  IncompatibleCompare: "cannot order these values (only number with number, string with string)",
  NotANumber: "unary - needs a number",
  CsvRequiresList: ":csv needs a list",
  UnknownFormatter: "unknown formatter (use :json or :csv)",
  TooDeep: "the expression nests too deeply"
}

/**
 * An expression could not be parsed or evaluated.
 *
 * @since 0.1.0
 * @category errors
 */
export class ExpressionError extends Schema.TaggedError<ExpressionError>()("ExpressionError", {
  reason: Schema.Literals(Reasons),
  /** The part at fault: a name, a key, an index, a character, values compared. */
  description: Schema.String,
  /** The template or expression text. */
  source: Schema.String
}) {
  override get message() {
    // A long source is quoted by its start: the error stays one readable line.
    const quoted = this.source.length <= 200
      ? JSON.stringify(this.source)
      : `${JSON.stringify(this.source.slice(0, 80))}… (${this.source.length} characters)`
    return `${explain[this.reason]}${this.description === "" ? "" : `: ${this.description}`} in ${quoted}`
  }
}

// ---------------------------------------------------------------------------------------------
// Scanner
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export type Token =
  | { readonly kind: "ident"; readonly text: string; readonly start: number; readonly end: number }
  | { readonly kind: "number"; readonly value: number; readonly start: number; readonly end: number }
  | { readonly kind: "string"; readonly value: string; readonly start: number; readonly end: number }
  | { readonly kind: "op"; readonly text: string; readonly start: number; readonly end: number }

const OPS = ["==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "-", ".", "[", "]", "(", ")", ":", "}"]
const ESCAPES: Record<string, string> = { "\"": "\"", "\\": "\\", n: "\n", t: "\t", r: "\r" }
const isIdentStart = (c: string) => /[A-Za-z_]/.test(c)
const isIdentPart = (c: string) => /[A-Za-z0-9_]/.test(c)
const isDigit = (c: string) => c >= "0" && c <= "9"

/**
 * Tokens of `text` from `from` up to the first `}` at the top level (excluded); `end` is the
 * index of that `}`, or `undefined` when `untilBrace` is false and the text ran out.
 *
 * @since 0.1.0
 * @category constructors
 */
export const scan = (
  text: string,
  from: number,
  untilBrace: boolean
): Result.Result<{ readonly tokens: ReadonlyArray<Token>; readonly end: number }, ExpressionError> => {
  const tokens: Array<Token> = []
  const fail = (reason: Reason, description: string) => Result.fail(new ExpressionError({ reason, description, source: text }))
  let i = from
  while (i < text.length) {
    const c = text[i]!
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++
    } else if (c === "}" && untilBrace) {
      return Result.succeed({ tokens, end: i })
    } else if (c === "\"") {
      let value = ""
      let j = i + 1
      for (;;) {
        if (j >= text.length) return fail("UnterminatedString", "")
        const d = text[j]!
        if (d === "\"") break
        if (d === "\\" && ESCAPES[text[j + 1] ?? ""] !== undefined) {
          value += ESCAPES[text[j + 1]!]
          j += 2
        } else {
          value += d
          j++
        }
      }
      tokens.push({ kind: "string", value, start: i, end: j + 1 })
      i = j + 1
    } else if (isDigit(c)) {
      const match = /^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i))!
      tokens.push({ kind: "number", value: Number(match[0]), start: i, end: i + match[0].length })
      i += match[0].length
    } else if (isIdentStart(c)) {
      let j = i + 1
      while (j < text.length && isIdentPart(text[j]!)) j++
      tokens.push({ kind: "ident", text: text.slice(i, j), start: i, end: j })
      i = j
    } else {
      const op = OPS.find((candidate) => text.startsWith(candidate, i))
      if (op === undefined || op === "}") return fail("UnexpectedChar", JSON.stringify(c))
      tokens.push({ kind: "op", text: op, start: i, end: i + op.length })
      i += op.length
    }
  }
  return untilBrace ? fail("UnclosedPlaceholder", "") : Result.succeed({ tokens, end: i })
}

// ---------------------------------------------------------------------------------------------
// Parser: || → && → unary ! - → one comparison → postfix . [] → primary
// ---------------------------------------------------------------------------------------------

const COMPARISONS: ReadonlyArray<string> = ["==", "!=", "<", "<=", ">", ">="]

/**
 * How deep parentheses, indexes and unary operators may nest: far beyond any real expression,
 * far below the stack the recursive parser and evaluator would overflow.
 *
 * @since 0.1.0
 * @category models
 */
export const MAX_DEPTH = 256

/**
 * Parses tokens into a node; an optional trailing `:name` is returned as the formatter.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseTokens = (
  tokens: ReadonlyArray<Token>,
  source: string
): Result.Result<{ readonly node: Node; readonly formatter: string | undefined }, ExpressionError> => {
  let at = 0
  let depth = 0
  class Stop {
    readonly error: ExpressionError
    constructor(error: ExpressionError) {
      this.error = error
    }
  }
  const fail = (reason: Reason, description: string): never => {
    throw new Stop(new ExpressionError({ reason, description, source }))
  }
  /** Parses one nested level (inside `(`, `[` or after `!`/`-`), refusing to go past `MAX_DEPTH`. */
  const nested = (parse: () => Node): Node => {
    if (++depth > MAX_DEPTH) return fail("TooDeep", `more than ${MAX_DEPTH} levels of parentheses, indexes or ! and -`)
    const node = parse()
    depth--
    return node
  }
  const isOp = (text: string) => {
    const token = tokens[at]
    return token !== undefined && token.kind === "op" && token.text === text
  }
  const describe = (token: Token | undefined) =>
    token === undefined
      ? "end of expression"
      : JSON.stringify(token.kind === "number" || token.kind === "string" ? String(token.value) : token.text)

  const or = (): Node => {
    let left = and()
    while (isOp("||")) {
      at++
      left = { _tag: "Or", left, right: and() }
    }
    return left
  }
  const and = (): Node => {
    let left = unary()
    while (isOp("&&")) {
      at++
      left = { _tag: "And", left, right: unary() }
    }
    return left
  }
  const unary = (): Node => {
    if (isOp("!")) {
      at++
      return { _tag: "Not", operand: nested(unary) }
    }
    if (isOp("-")) {
      at++
      return { _tag: "Negate", operand: nested(unary) }
    }
    return comparison()
  }
  const comparison = (): Node => {
    const left = postfix()
    const token = tokens[at]
    if (token?.kind === "op" && COMPARISONS.includes(token.text)) {
      at++
      return { _tag: "Compare", op: token.text as Comparison, left, right: postfix() }
    }
    return left
  }
  const postfix = (): Node => {
    let node = primary()
    for (;;) {
      if (isOp(".")) {
        at++
        const name = tokens[at]
        if (name?.kind !== "ident") return fail("UnexpectedChar", describe(name))
        at++
        node = { _tag: "Member", object: node, name: name.text }
      } else if (isOp("[")) {
        at++
        const index = nested(or)
        if (!isOp("]")) return fail("MissingRbracket", "")
        at++
        node = { _tag: "Index", object: node, index }
      } else {
        return node
      }
    }
  }
  const primary = (): Node => {
    const token = tokens[at]
    if (token === undefined) return fail("UnexpectedChar", "end of expression")
    at++
    switch (token.kind) {
      case "number":
        return { _tag: "Literal", value: token.value }
      case "string":
        return { _tag: "Literal", value: token.value }
      case "ident":
        if (token.text === "true") return { _tag: "Literal", value: true }
        if (token.text === "false") return { _tag: "Literal", value: false }
        if (token.text === "null") return { _tag: "Literal", value: null }
        return { _tag: "Identifier", name: token.text }
      case "op": {
        if (token.text !== "(") return fail("UnexpectedChar", describe(token))
        const inner = nested(or)
        if (!isOp(")")) return fail("MissingRparen", "")
        at++
        return inner
      }
    }
  }

  // The parser's inner functions unwind with `Stop`; it never leaves this function.
  try {
    const node = or()
    let formatter: string | undefined
    if (isOp(":") && tokens[at + 1]?.kind === "ident" && at + 2 === tokens.length) {
      formatter = (tokens[at + 1] as { readonly text: string }).text
      at += 2
    }
    if (at < tokens.length) {
      return Result.fail(
        new ExpressionError({ reason: "TrailingTokens", description: describe(tokens[at]), source })
      )
    }
    return Result.succeed({ node, formatter })
  } catch (stop) {
    if (stop instanceof Stop) return Result.fail(stop.error)
    throw stop
  }
}

/**
 * Parses a whole expression (no `${` `}` around it).
 *
 * @since 0.1.0
 * @category constructors
 */
export const parse = (text: string): Result.Result<Node, ExpressionError> =>
  Result.flatMap(scan(text, 0, false), ({ tokens }) =>
    Result.flatMap(parseTokens(tokens, text), ({ formatter, node }) =>
      formatter === undefined
        ? Result.succeed(node)
        : Result.fail(new ExpressionError({ reason: "TrailingTokens", description: JSON.stringify(`:${formatter}`), source: text }))))

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

/** Falsy: `null`, `false`, `""`, `[]`, `0`; everything else is truthy. */
export const isTruthy = (value: Value): boolean =>
  !(value === null || value === false || value === "" || value === 0 || (Array.isArray(value) && value.length === 0))

const equals = (a: Value, b: Value): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false
    return a.every((item: Value, i: number) => equals(item, b[i]!))
  }
  const ka = Object.keys(a)
  const objB = b as { readonly [key: string]: Value }
  return ka.length === Object.keys(objB).length &&
    ka.every((key) => Object.hasOwn(objB, key) && equals((a as { readonly [key: string]: Value })[key]!, objB[key]!))
}

const isObject = (value: Value): value is { readonly [key: string]: Value } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A value as one short phrase in an error: JSON, cut at 80 characters. */
export const show = (value: Value): string => {
  const text = JSON.stringify(value)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}

/**
 * Evaluates a node against `scope` (`inputs`, `steps`, bindings).
 *
 * @since 0.1.0
 * @category combinators
 */
export const evaluate = (
  node: Node,
  scope: Readonly<Record<string, Value>>,
  source: string
): Result.Result<Value, ExpressionError> => {
  const fail = (reason: Reason, description: string) => Result.fail(new ExpressionError({ reason, description, source }))
  const go = (n: Node): Result.Result<Value, ExpressionError> => {
    switch (n._tag) {
      case "Literal":
        return Result.succeed(n.value)
      case "Identifier":
        return Object.hasOwn(scope, n.name) ? Result.succeed(scope[n.name]!) : fail("UndefinedIdentifier", n.name)
      case "Member":
        return Result.flatMap(go(n.object), (object) => {
          if (object === null) return Result.succeed(null)
          if (!isObject(object)) return fail("NotAnObject", n.name)
          return Object.hasOwn(object, n.name) ? Result.succeed(object[n.name]!) : fail("UndefinedMember", n.name)
        })
      case "Index":
        return Result.flatMap(go(n.object), (object) =>
          Result.flatMap(go(n.index), (index) => {
            if (object === null) return Result.succeed(null)
            if (Array.isArray(object) && typeof index === "number" && Number.isInteger(index)) {
              const at = index < 0 ? object.length + index : index
              return at >= 0 && at < object.length ? Result.succeed(object[at]!) : fail("IndexOutOfRange", String(index))
            }
            if (isObject(object) && typeof index === "string") {
              // The key may be a step's output: quoted by its start, as `show` quotes values.
              return Object.hasOwn(object, index) ? Result.succeed(object[index]!) : fail("UndefinedKey", index.length > 80 ? `${index.slice(0, 77)}...` : index)
            }
            return fail("InvalidIndex", show(index))
          }))
      case "Not":
        return Result.map(go(n.operand), (value) => !isTruthy(value))
      case "Negate":
        return Result.flatMap(go(n.operand), (value) => typeof value === "number" ? Result.succeed(-value) : fail("NotANumber", show(value)))
      case "And":
        return Result.flatMap(go(n.left), (left) => (isTruthy(left) ? Result.map(go(n.right), isTruthy) : Result.succeed(false)))
      case "Or":
        return Result.flatMap(go(n.left), (left) => (isTruthy(left) ? Result.succeed(true) : Result.map(go(n.right), isTruthy)))
      case "Compare":
        return Result.flatMap(go(n.left), (left) =>
          Result.flatMap(go(n.right), (right) => {
            if (n.op === "==") return Result.succeed(equals(left, right))
            if (n.op === "!=") return Result.succeed(!equals(left, right))
            const comparable = (typeof left === "number" && typeof right === "number") ||
              (typeof left === "string" && typeof right === "string")
            if (!comparable) return fail("IncompatibleCompare", `${show(left)} ${n.op} ${show(right)}`)
            const [a, b] = [left as number | string, right as number | string]
            return Result.succeed(n.op === "<" ? a < b : n.op === "<=" ? a <= b : n.op === ">" ? a > b : a >= b)
          }))
    }
  }
  return go(node)
}
