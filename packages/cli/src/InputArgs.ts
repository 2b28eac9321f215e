/**
 * InputArgs — what `--input` says: one JSON object (Condukt's form), or `key=value` pairs, the
 * flag repeated. A pair's value is taken as written for a `string` input and read as JSON for the
 * others (`times=3` is the number 3), so the input check sees the types the workflow declares.
 * Refuses: a mix of the two forms, JSON that is not an object, a pair without `=`, a value past
 * `JsonLimits` (named). Every key is a plain key, `__proto__` included (it then reaches the input
 * check like any other name).
 */
import type { Document } from "@condukt/workflows"
import * as JsonLimits from "@condukt/core/JsonLimits"
import { Result } from "effect"

const refusal = (key: string, error: JsonLimits.JsonLimitError) =>
  `--input ${key}: the value holds ${error.description}, past what an input may be; pass a smaller value`

/**
 * The inputs the flags give, or a sentence saying what is wrong with them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parse = (
  flags: ReadonlyArray<string>,
  specs: Readonly<Record<string, Document.InputSpec>>
): Result.Result<Readonly<Record<string, unknown>>, string> => {
  if (flags.length === 0) return Result.succeed({})
  if (flags.length === 1 && flags[0]!.trimStart().startsWith("{")) {
    // Any nesting is parsed (V8's parser is iterative, and argv holds at most 128 KiB), so each
    // input past the bounds is named: the values are held to JsonLimits one by one below.
    const parsed = JsonLimits.parse(flags[0]!, { ...JsonLimits.defaults, maxDepth: Infinity })
    if (Result.isFailure(parsed) && parsed.failure.reason !== "NotJson") return Result.fail(`--input holds ${parsed.failure.description}`)
    if (Result.isFailure(parsed) || typeof parsed.success !== "object" || parsed.success === null || Array.isArray(parsed.success)) {
      return Result.fail(`--input must be a JSON object or key=value pairs, got ${flags[0]}`)
    }
    for (const [key, value] of Object.entries(parsed.success)) {
      const refused = JsonLimits.check(value)
      if (refused !== undefined) return Result.fail(refusal(key, refused))
    }
    return Result.succeed(parsed.success as Readonly<Record<string, unknown>>)
  }
  const inputs: Array<readonly [string, unknown]> = []
  for (const flag of flags) {
    const eq = flag.indexOf("=")
    if (eq <= 0) return Result.fail(`--input ${flag}: expected key=value (or one JSON object)`)
    const key = flag.slice(0, eq)
    const raw = flag.slice(eq + 1)
    const type = Object.hasOwn(specs, key) ? specs[key]!.type : undefined
    if (type === undefined || type === "string") {
      inputs.push([key, raw])
    } else {
      const parsed = JsonLimits.parse(raw)
      if (Result.isFailure(parsed) && parsed.failure.reason !== "NotJson") return Result.fail(refusal(key, parsed.failure))
      inputs.push([key, Result.isSuccess(parsed) ? parsed.success : raw])
    }
  }
  // fromEntries defines each key: `__proto__=x` is an input named __proto__, not a prototype.
  return Result.succeed(Object.fromEntries(inputs))
}
