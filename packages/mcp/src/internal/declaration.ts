/**
 * declaration — what an MCP server declaration holds, by transport. `McpServer` re-exports these
 * (`McpServer.StdioOptions`…); they live here so the client and the transports, which McpServer
 * imports, name them without importing McpServer back.
 */
import type { Elicitation, Supervisor } from "@condukt/core"
import type { Duration, Effect } from "effect"
import type * as McpAuth from "../McpAuth.ts"

/** @since 0.1.0 @category models */
export interface CommonOptions {
  /** Letters, digits, `_` and `-`, starting with a letter; unique among a session's servers. */
  readonly name: string
  /** Tools are exposed as `<prefix>.<tool>`; default the server's name, `""` for bare names. */
  readonly prefix?: string | undefined
  /** Spawn or connect, `initialize` and `tools/list` together (default 10 seconds). */
  readonly initTimeout?: Duration.Input | undefined
  /** One `tools/call` (default 60 seconds). */
  readonly requestTimeout?: Duration.Input | undefined
  /** What the session's supervisor does when the connection dies (default `temporary`: nothing). */
  readonly restart?: Supervisor.Restart | undefined
  /**
   * Server requests for user input (`elicitation/create`): by default, in a session, the session
   * answers (its handler, or an `ElicitationRequested` event and `session.respond`), and without a
   * session they are not offered; with `accept-defaults` every form is accepted with the defaults
   * its schema gives; with a handler, each form is answered by it (a URL elicitation is declined).
   */
  readonly elicitation?: "accept-defaults" | Elicit | undefined
  /**
   * Server requests to sample the session's model (`sampling/createMessage`): `deny` (the default)
   * does not offer it; `allow` answers them with the session's own model, its tokens counted in the
   * session's usage and the run's, the request bounded and the answer redacted (ADR 0063); `ask`
   * does the same once a person approved each request (`ApprovalRequested`, `session.approve`).
   */
  readonly sampling?: "allow" | "ask" | "deny" | undefined
  /**
   * What a call of one of the server's tools does when no rule allows the tool by its exact name
   * (`<prefix>.<tool>`; a glob does not count): `ask` a person, or be denied. Default: the session's
   * rules alone decide. So a tool the server adds tomorrow cannot run unasked (docs/approvals.md).
   */
  readonly approval?: "ask" | "deny" | undefined
  /** The most tokens one sampled answer may take (default 4096; a server asking fewer gets fewer). */
  readonly maxSamplingTokens?: number | undefined
  /**
   * The largest message the server may send (bytes, default 10 MiB): a stdio line, a JSON answer,
   * an SSE event. A larger answer to a call is skipped unread and that call fails with
   * `ResultTooLarge`; the server stays up.
   */
  readonly maxMessageBytes?: number | undefined
  /** The most of a tool result the model reads (code points, default 100,000); the rest is cut visibly. */
  readonly maxResultChars?: number | undefined
  /** Pages one `tools/list` may take (default 100). */
  readonly maxToolPages?: number | undefined
  /** Tools the server may list (default 10,000). */
  readonly maxTools?: number | undefined
  /** One whole `tools/list`, every page (default 30 seconds; at start, `initTimeout` bounds it too). */
  readonly listTimeout?: Duration.Input | undefined
  /**
   * Which of the server's tools may run again after their process died mid-call (`Tool.retrySafe`):
   * all (`true`), none (`false`), or those named (the server's own names). Absent, a tool the
   * server annotates `readOnlyHint` or `idempotentHint` is (ADR 0065).
   */
  readonly retrySafe?: boolean | ReadonlyArray<string> | undefined
}

/** @since 0.1.0 @category models */
export interface StdioOptions extends CommonOptions {
  /** An executable path or a name looked up on PATH; never run through a shell. */
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  readonly cwd?: string | undefined
  /**
   * Variables beyond PATH, HOME and the like: names passed through (the session's secret of that
   * name, else the host's variable), or a map to a literal or a `Secret`
   * (`{ GH_TOKEN: Secret.env("GITHUB_TOKEN") }`).
   */
  readonly env?: ReadonlyArray<string> | Readonly<Record<string, string | McpAuth.SecretInput>> | undefined
}

/** @since 0.1.0 @category models */
export interface HttpOptions extends CommonOptions {
  readonly url: string
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly auth?: McpAuth.McpAuth | undefined
}

/** A declaration with its transport. */
export type Declaration =
  | (StdioOptions & { readonly transport: "stdio" })
  | (HttpOptions & { readonly transport: "sse" | "http" })

/** What a server asks the user through `elicitation/create` (form mode). */
export interface ElicitationRequest {
  /** The server's name in its declaration. */
  readonly server: string
  /** The server's message to the user. */
  readonly message: string
  /** The form: a flat JSON Schema object of primitive properties. */
  readonly requestedSchema: { readonly type: "object"; readonly properties: Readonly<Record<string, object>>; readonly required?: ReadonlyArray<string> | undefined }
}

/** The user's answer: the form's values, a refusal, or a dismissal (the session's `Elicitation.Answer`). */
export type ElicitationAnswer = Elicitation.Answer

/** A program's answer to a server's elicitation. */
export type Elicit = (request: ElicitationRequest) => Effect.Effect<ElicitationAnswer>
