/**
 * ToolName — the one rule that turns names we do not choose into tool names a model can be given.
 *
 * Two places need it: an MCP server's tools are exposed as `<prefix>.<tool>`, whatever characters
 * the server put in its names, and a resolved model sends every tool under a name its provider
 * accepts (Anthropic and OpenAI take `^[a-zA-Z0-9_-]{1,64}$`: no `.`). Both apply `safeNames` to
 * a whole set of names, with their own `Charset`:
 *
 * - a name already safe is kept;
 * - any other character becomes `_` (an empty name becomes `tool`), and for a provider a name
 *   starting with neither a letter nor `_` gets a `_` in front (Gemini refuses `1x`);
 * - the name ends in `_` and the 8-hex-digit `hash` of the original, its start cut to fit 64
 *   characters, when it is longer than 64 or when its `_` form is taken in the set (a safe name,
 *   or the `_` form of another name);
 * - a name still taken after that (a real tool named like a hash) gets `_2`, `_3`….
 *
 * So a name the rule changes never lands on another name of its set, the result depends on the set
 * and not on its order (but for that last, astronomically rare step), and a name changes no more
 * than it must: `github.create_issue` is sent as `github_create_issue`. The module refuses to keep a reverse table: callers map back themselves.
 */

/**
 * The longest name the rule gives (Anthropic's and OpenAI's limit).
 *
 * @since 0.1.0
 * @category models
 */
export const MAX_LENGTH = 64

/**
 * The characters a name may keep: `provider` — letters, digits, `_`, `-`, starting with a letter
 * or `_` (what every provider accepts); `tool` — those and `.`, so `<prefix>.<tool>` reads as it is
 * written.
 *
 * @since 0.1.0
 * @category models
 */
export type Charset = "provider" | "tool"

const others: Record<Charset, RegExp> = { provider: /[^a-zA-Z0-9_-]/g, tool: /[^a-zA-Z0-9_.-]/g }
// Gemini also wants a provider name to start with a letter or `_` (`1x`, `-x` are refused).
const whole: Record<Charset, RegExp> = { provider: /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/, tool: /^[a-zA-Z0-9_.-]{1,64}$/ }

/** The name with every character `charset` lacks made `_`; a provider name not starting with a letter or `_` gets one first. */
const formOf = (name: string, charset: Charset): string => {
  const form = name.replace(others[charset], "_") || "tool"
  return charset === "provider" && !/^[a-zA-Z_]/.test(form) ? `_${form}` : form
}

const encoder = new TextEncoder()

/**
 * FNV-1a, 32 bits, of the UTF-8 bytes of `text`, as 8 hex digits: stable across runs and
 * platforms, enough to tell names apart.
 *
 * @since 0.1.0
 * @category constructors
 */
export const hash = (text: string): string => {
  let h = 0x811c9dc5
  for (const byte of encoder.encode(text)) h = Math.imul(h ^ byte, 0x01000193) >>> 0
  return h.toString(16).padStart(8, "0")
}

/**
 * Whether `name` is kept as it is: 1 to 64 characters of `charset`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isSafe = (name: string, charset: Charset): boolean => whole[charset].test(name)

/**
 * The safe name of every name of `names` that is not safe already (see the module comment for the
 * rule); names absent from the map are kept as they are.
 *
 * @since 0.1.0
 * @category constructors
 */
export const safeNames = (names: Iterable<string>, charset: Charset): ReadonlyMap<string, string> => {
  const unique = new Set(names)
  const taken = new Set<string>()
  const replaced = new Map<string, string>()
  const forms = new Map<string, number>()
  for (const name of unique) {
    if (isSafe(name, charset)) {
      taken.add(name)
      continue
    }
    const form = formOf(name, charset)
    replaced.set(name, form)
    forms.set(form, (forms.get(form) ?? 0) + 1)
  }
  const out = new Map<string, string>()
  for (const [name, form] of replaced) {
    const hashed = form.length > MAX_LENGTH || taken.has(form) || forms.get(form)! > 1
    const base = hashed ? `${form.slice(0, MAX_LENGTH - 9)}_${hash(name)}` : form
    let safe = base
    for (let n = 2; taken.has(safe); n++) safe = `${base.slice(0, MAX_LENGTH - String(n).length - 1)}_${n}`
    taken.add(safe)
    out.set(name, safe)
  }
  return out
}
