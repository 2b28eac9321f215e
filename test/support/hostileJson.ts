/**
 * hostileJson — JSON a hostile peer sends (issue 37, item 5): nested 100,000 deep, a million keys
 * in one object, a 100 MB string, lone surrogates, `__proto__` keys, and nesting just at and just
 * past `JsonLimits.MAX_DEPTH`. Texts are built without recursion, values from them with
 * `JSON.parse` (iterative in V8), so the corpus itself never overflows a stack.
 */
import * as JsonLimits from "@condukt/core/JsonLimits"

/** The nesting of the deep cases: ten times the one that broke a session's store. */
export const DEEP = 100_000

/** The keys of the wide case. */
export const MANY_KEYS = 1_000_000

/** The characters of the huge string: use it once or twice in a suite, not per test. */
export const HUGE_STRING_CHARS = 100 * 1024 * 1024

/** The deepest nesting accepted, and the first refused. */
export const JUST_UNDER = JsonLimits.MAX_DEPTH
export const JUST_OVER = JsonLimits.MAX_DEPTH + 1

/** An array nested `depth` levels deep, as text: `[[[…]]]`. */
export const nestedArrayText = (depth: number): string => "[".repeat(depth) + "]".repeat(depth)

/** An object nested `depth` levels deep, as text: `{"a":{"a":…{}}}`. */
export const nestedText = (depth: number): string => `${"{\"a\":".repeat(depth - 1)}{}${"}".repeat(depth - 1)}`

/** An object nested `depth` levels deep. */
export const nested = (depth: number): Record<string, unknown> => JSON.parse(nestedText(depth)) as Record<string, unknown>

/** One object with `count` keys (`k0`…), as text. */
export const manyKeysText = (count: number = MANY_KEYS): string => {
  const parts = new Array<string>(count)
  for (let i = 0; i < count; i++) parts[i] = `"k${i}":${i}`
  return `{${parts.join(",")}}`
}

/** A string of `chars` characters. */
export const hugeString = (chars: number = HUGE_STRING_CHARS): string => "x".repeat(chars)

/** Strings holding lone surrogates: JSON writes them escaped (`"\ud800"`), they are no valid UTF-16. */
export const loneSurrogates: ReadonlyArray<string> = ["\ud800", "a\udfffb", "\udc00\ud800"]

/** Keys that set a prototype when assigned: parsed from this text, they must stay plain keys. */
export const protoKeysText = `{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"x":1}`

/** The value of `protoKeysText`: an object whose own keys are `__proto__`, `constructor` and `x`. */
export const protoKeys = (): Record<string, unknown> => JSON.parse(protoKeysText) as Record<string, unknown>

/** Whether a `__proto__` key polluted anything: every object would then have `polluted`. */
export const polluted = (): boolean => (({}) as { readonly polluted?: unknown }).polluted !== undefined

/** How deep `value` nests (objects and arrays), without recursion. */
export const depthOf = (value: unknown): number => {
  let max = 0
  const stack: Array<readonly [unknown, number]> = [[value, 1]]
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!
    if (typeof item !== "object" || item === null) continue
    max = Math.max(max, depth)
    for (const child of Object.values(item)) stack.push([child, depth + 1])
  }
  return max
}
