/**
 * Limits — how much the server takes from a client, and what it answers past it. Every text from a
 * client is hostile: its body, its headers, how long it takes to send them, how many streams it
 * holds open and how fast it asks are bounded, and each bound has a clear answer (413, 431, 408,
 * 429), given before the request costs anything else.
 *
 * Two places take them: `Server.layer`'s `limits` bound what the routes do however they are served
 * (bodies, streams, requests per second), `Server.listen`'s the Node port (bodies before they are
 * read, headers, timeouts). Give both the same: a body larger than either is refused.
 */

/** @since 0.1.0 @category models */
export interface Limits {
  /** A request body's bytes (default 1 MiB): more is a 413 before the rest is read. */
  readonly maxBodyBytes?: number | undefined
  /** The headers' bytes (default 16 KiB) and count (default 100): more is a 431. */
  readonly maxHeaderBytes?: number | undefined
  readonly maxHeaders?: number | undefined
  /** How long a client may take to send its headers, and its whole request (default 10 s, 30 s): then 408. */
  readonly headersTimeout?: number | undefined
  readonly requestTimeout?: number | undefined
  /** Event streams one principal may hold open at once (default 32): another is a 429. */
  readonly streamsPerPrincipal?: number | undefined
  /** Requests one principal may make per second, on average (default 50, in bursts of 200): more is a 429. */
  readonly requestsPerSecond?: number | undefined
  readonly burst?: number | undefined
}

/** @since 0.1.0 @category models */
export const DEFAULTS = {
  maxBodyBytes: 1024 * 1024,
  maxHeaderBytes: 16 * 1024,
  maxHeaders: 100,
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  streamsPerPrincipal: 32,
  requestsPerSecond: 50,
  burst: 200
} as const satisfies Required<Limits>

/** @since 0.1.0 @category models */
export type Resolved = { readonly [K in keyof typeof DEFAULTS]: number }

/** `limits` with the defaults for what it leaves out. */
export const resolve = (limits: Limits = {}): Resolved => ({
  maxBodyBytes: limits.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
  maxHeaderBytes: limits.maxHeaderBytes ?? DEFAULTS.maxHeaderBytes,
  maxHeaders: limits.maxHeaders ?? DEFAULTS.maxHeaders,
  headersTimeout: limits.headersTimeout ?? DEFAULTS.headersTimeout,
  requestTimeout: limits.requestTimeout ?? DEFAULTS.requestTimeout,
  streamsPerPrincipal: limits.streamsPerPrincipal ?? DEFAULTS.streamsPerPrincipal,
  requestsPerSecond: limits.requestsPerSecond ?? DEFAULTS.requestsPerSecond,
  burst: limits.burst ?? DEFAULTS.burst
})

/** An id's characters (a session's, a call's, an agent's name) the server takes. */
export const MAX_ID_LENGTH = 255
/** A prompt's characters. */
export const MAX_PROMPT_LENGTH = 256 * 1024
/** A page of a list. */
export const MAX_PAGE = 1000
/** How often an open stream with nothing to send says it is alive (ms). */
export const HEARTBEAT = 15_000
