/**
 * negotiation — which protocol revision a connection speaks (ADR 0069).
 *
 * Stdio and Streamable HTTP: the SDK's `auto` mode. The client first sends `server/discover`
 * (2026-07-28); a server that answers with a revision we share is spoken to in it (stateless on
 * Streamable HTTP: no `initialize`, no session, each request carrying its `_meta` envelope), and
 * any other answer — an error, `-32601`, a 2025 server's refusal — falls back to the `initialize`
 * handshake, which settles on the newest 2025 revision both sides know (2025-11-25 down to
 * 2024-11-05). On stdio a server that does not answer the probe at all is a legacy one after half
 * of `initTimeout` (the other half is left for `initialize`); over HTTP silence is an outage, and
 * the connection fails at `initTimeout`. Legacy HTTP+SSE predates 2026-07-28 (it was deprecated in
 * 2025-03-26): it runs `initialize` only, as before. The list of revisions is the SDK's
 * (`SUPPORTED_PROTOCOL_VERSIONS` and its modern-era twin): this module only picks the mode.
 */
import type { VersionNegotiationOptions } from "@modelcontextprotocol/client"
import { Duration } from "effect"
import type { Declaration } from "./declaration.ts"

/** How a declaration's connection negotiates its revision. */
export const options = (declaration: Declaration): VersionNegotiationOptions => {
  if (declaration.transport === "sse") return { mode: "legacy" }
  if (declaration.transport === "http") return { mode: "auto" }
  const initMs = declaration.initTimeout === undefined ? 10_000 : Duration.toMillis(Duration.fromInputUnsafe(declaration.initTimeout))
  return { mode: "auto", probe: { timeoutMs: Math.max(1, Math.floor(initMs / 2)) } }
}
