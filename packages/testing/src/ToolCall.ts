/**
 * ToolCall — calling a tool in a test exactly as the Executor calls it: the model's input decoded
 * by the tool's parameters, then `call` with the context a session would pass.
 */
import { Redactor, type Sandbox, Tool } from "@condukt/core"
import { Effect, type Redacted } from "effect"

/**
 * The context a session gives a call: ids for a test, the sandbox's cwd, no secrets or assigns
 * unless given, and a session's redaction of those secrets (then `redactor`, when given).
 *
 * @since 0.1.0
 * @category constructors
 */
export const context = (
  sandbox: Sandbox.Service,
  options: {
    readonly secrets?: Readonly<Record<string, Redacted.Redacted<string>>>
    readonly assigns?: Readonly<Record<string, unknown>>
    readonly redactor?: Redactor.Service
    /** How the call asks a person mid-call (default: it cannot, as a tool not declared `asks`). */
    readonly approve?: Tool.Context["approve"]
  } = {}
): Tool.Context => ({
  sessionId: "test",
  agent: "test",
  sandbox,
  cwd: sandbox.cwd,
  secrets: options.secrets ?? {},
  redact: Redactor.compose(Redactor.secrets(options.secrets ?? {}), options.redactor ?? Redactor.none).redact,
  assigns: options.assigns ?? {},
  callId: "call_1",
  approve: options.approve ?? Tool.cannotAsk("test")
})

/**
 * Decodes `input` with the tool's parameters and calls it; invalid input fails with the
 * `InvalidArguments` error the model would read about.
 *
 * @since 0.1.0
 * @category combinators
 */
export const run = <R>(tool: Tool.Tool<R>, input: unknown, context: Tool.Context) =>
  Effect.flatMap(tool.decode(input), (args) => tool.call(args, context))

/**
 * The message of the failure a call ends with: what the model reads after `Error: `.
 *
 * @since 0.1.0
 * @category combinators
 */
export const failure = <R>(tool: Tool.Tool<R>, input: unknown, context: Tool.Context) =>
  Effect.map(Effect.flip(run(tool, input, context)), (error) => (typeof error === "string" ? error : error.message))
