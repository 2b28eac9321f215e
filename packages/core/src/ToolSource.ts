/**
 * ToolSource — a source of tools a session owns, started with the session and ended with it.
 *
 * This is the seam between sessions and MCP: core never imports an MCP SDK, `@condukt/mcp`
 * implements this contract (an `McpServer` declaration is a `ToolSource`). `Session.start` starts
 * every source of its agent in parallel inside the session's scope, under a supervisor it makes for
 * them; the first failure interrupts the others and fails the start, so nothing is left running.
 * A running source's tools may change (MCP's `list_changed`): the session reads them before every
 * model request and rebuilds its executor when they did, so a change shows from the next turn.
 * This module refuses to know how a source connects, what it speaks, or how it restarts.
 */
import type { Effect, Redacted, Scope } from "effect"
import type * as Approval from "./Approval.ts"
import type * as Elicitation from "./Elicitation.ts"
import type * as Model from "./Model.ts"
import type * as Sandbox from "./Sandbox.ts"
import type { Payload } from "./SessionEvent.ts"
import type { McpStartFailed } from "./SessionError.ts"
import type * as Supervisor from "./Supervisor.ts"
import type * as Tool from "./Tool.ts"

/** The events a source may publish into its session's stream. */
export type Event = Extract<Payload, { readonly _tag: "McpServerStarted" | "McpServerStopped" | "McpServerDown" }>

/**
 * What a source gets from the session that starts it.
 *
 * @since 0.1.0
 * @category models
 */
export interface StartContext {
  readonly sessionId: string
  readonly agent: string
  /** The session's resolved secrets, by environment variable name. */
  readonly secrets: Readonly<Record<string, Redacted.Redacted<string>>>
  /**
   * The session's redaction (its secrets, then the program's `Redactor`): every text of a source's
   * errors and events passes through it, after the source's own credentials.
   */
  readonly redact: (text: string) => string
  /** The supervisor the session keeps for its sources' connections (OTP: children of the session). */
  readonly supervisor: Supervisor.Supervisor
  /**
   * Publishes an event into the session's stream: into the running run; between runs, to the
   * session's observers at once and to the next run's own stream when it starts.
   */
  readonly emit: (event: Event) => Effect.Effect<void>
  /**
   * The session's own model, for a source whose servers may ask it something (MCP's
   * `sampling/createMessage`, when the server's declaration allows it). Absent: nothing to sample.
   */
  readonly model?: Model.Service | undefined
  /**
   * The host directories the session's tools work in (`rootsOf` its sandbox), for a server that
   * asks (MCP's `roots/list`); reading them builds the sandbox if it was not yet. Absent: no roots.
   */
  readonly roots?: Effect.Effect<ReadonlyArray<Root>> | undefined
  /**
   * Runs `onChange` after each change of the roots (a virtual sandbox's runtime mount), before the
   * change's tool call returns, for as long as the calling scope lasts; it builds the sandbox, as
   * reading the roots does (MCP's `notifications/roots/list_changed`). Absent: no roots.
   */
  readonly watchRoots?: ((onChange: Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>) | undefined
  /**
   * Asks a person through the session's approval flow (an `ApprovalRequested` event, answered with
   * `session.approve` / `deny`) whether the source may do `tool` with `input` (MCP's sampling
   * under `sampling: "ask"`). Absent: nobody to ask.
   */
  readonly approve?: ((request: { readonly tool: string; readonly input: unknown }) => Effect.Effect<Approval.Answer>) | undefined
  /**
   * Puts a server's question to the program (MCP's `elicitation/create`): the session's handler,
   * or an `ElicitationRequested` event answered with `session.respond`; `Unanswerable` when
   * nobody can answer. Absent: no session to ask.
   */
  readonly elicit?: ((request: Elicitation.Request) => Effect.Effect<Elicitation.Answer, Elicitation.Unanswerable>) | undefined
}

/**
 * A directory a source's servers may work in: a `file://` URI and a name for people.
 *
 * @since 0.1.0
 * @category models
 */
export interface Root {
  readonly uri: string
  readonly name: string
}

/**
 * The `file://` URI of an absolute POSIX path (each segment percent-encoded as a URI path needs).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fileUri = (path: string): string => `file://${path.split("/").map(encodeURIComponent).join("/")}`

/**
 * A started source: its tools as they are now (a new array whenever they change).
 *
 * @since 0.1.0
 * @category models
 */
export interface Running {
  readonly tools: Effect.Effect<ReadonlyArray<Tool.Tool>>
  /**
   * Credentials the source resolved for itself (bearer tokens, OAuth client secrets, values given
   * to a server's environment), by name: the session redacts them from everything it emits.
   */
  readonly secrets?: Readonly<Record<string, Redacted.Redacted<string>>> | undefined
}

/**
 * A source of tools a session starts in its scope; `R` is what starting it needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolSource<out R = never> {
  readonly _tag: "ToolSource"
  /** Unique among a session's sources; named in errors and events. */
  readonly name: string
  /** Whether its tools' calls ask (or are denied) unless a rule allows them by name (`Tool.Discovered`). */
  readonly unlisted?: "ask" | "deny" | undefined
  readonly start: (context: StartContext) => Effect.Effect<Running, McpStartFailed, R | Scope.Scope>
}

/**
 * A sandbox's roots: its host directories (`Sandbox.hostDirectories`; the cwd alone when it does
 * not say), the cwd named `cwd`, any other by its path.
 *
 * @since 0.1.0
 * @category constructors
 */
export const rootsOf = (sandbox: Sandbox.Service): ReadonlyArray<Root> =>
  (sandbox.hostDirectories?.() ?? [sandbox.cwd]).map((path) => ({ uri: fileUri(path), name: path === sandbox.cwd ? "cwd" : path }))
