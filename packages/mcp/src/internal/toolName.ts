/**
 * toolName — the name a model sees for an MCP tool: `<prefix>.<tool>`, or the bare tool name with
 * an empty prefix.
 *
 * A name must be 1-64 characters of letters, digits, `_`, `.` and `-` (what Tool.make takes, within
 * the 64 characters providers allow). Other characters become `_`; a name that had to change, or
 * is longer than 64, ends in `_` and 8 hex digits of a hash of the original, so two MCP names never
 * map to one model name by accident. The mapping is deterministic; each server keeps the reverse
 * table (model name → wire name), so the original name is what goes over the wire.
 */

export const MAX_NAME_LENGTH = 64

const allowed = /^[A-Za-z0-9_.-]+$/

/** FNV-1a, 32 bits: stable across runs and platforms, enough to tell names apart. */
const hash = (text: string): string => {
  let h = 0x811c9dc5
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(16).padStart(8, "0")
}

/** The model-facing name of `tool` of a server exposed under `prefix`. */
export const exposed = (prefix: string, tool: string): string => {
  const full = prefix === "" ? tool : `${prefix}.${tool}`
  if (allowed.test(full) && full.length <= MAX_NAME_LENGTH) return full
  const safe = full.replace(/[^A-Za-z0-9_.-]/g, "_")
  return `${safe.slice(0, MAX_NAME_LENGTH - 9)}_${hash(full)}`
}
