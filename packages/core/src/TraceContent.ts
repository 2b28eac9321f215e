/**
 * TraceContent — whether a run's spans carry what was said: the prompts and replies of each
 * `chat` span, the arguments and result of each `execute_tool` span (the OpenTelemetry GenAI
 * conventions' opt-in content attributes). Off by default: a trace holds names, ids, models and
 * counts only. On, every text passes through the session's redaction first (its secrets, its
 * model's and MCP servers' credentials, the program's `Redactor`) and is cut at `MAX_TEXT`
 * characters, so a trace never holds a secret and a huge tool output does not become a huge span.
 * docs/observability.md, docs/decisions/0057-genai-spans-and-cost.md.
 *
 * @since 0.1.0
 */
import { Context, Layer } from "effect"

/**
 * Whether spans carry content (default `false`).
 *
 * @since 0.1.0
 * @category references
 */
export const TraceContent = Context.Reference<boolean>("@condukt/core/TraceContent", { defaultValue: () => false })

/**
 * Turns content on for the program it is provided to.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never> = Layer.succeed(TraceContent, true)

/**
 * The most characters of one text (a message part, a tool's arguments or result) a span holds;
 * the rest is cut and the cut is said.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_TEXT = 16 * 1024
