/**
 * bubblewrap for the confinement tests, from the project's script (scripts/setup-bubblewrap.sh:
 * Debian's package, as root) when `bwrap` is missing.
 */
import { execFileSync } from "node:child_process"
import { join } from "node:path"

/** Why bubblewrap cannot be had here (no root, no package source), or undefined once it is there. */
export const missing = (): string | undefined => {
  try {
    execFileSync("bash", [join(import.meta.dirname, "../../../../scripts/setup-bubblewrap.sh")], { stdio: ["ignore", "ignore", "pipe"] })
    return undefined
  } catch (error) {
    return String((error as { stderr?: unknown }).stderr ?? error).trim()
  }
}
