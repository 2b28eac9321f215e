/**
 * bubblewrap for the confinement tests, from the project's script (scripts/setup-bubblewrap.sh:
 * Debian's package, as root) when `bwrap` is missing.
 *
 * The confinement tests run on Linux wherever bubblewrap is there or can be installed: `bwrap` on
 * the PATH, or apt-get with the rights to run it (root, or sudo without a password). There a
 * bubblewrap that cannot be had (the install failed, the binary does not run) throws from
 * `missing`, which the test files call as they load: they fail, never skip. Elsewhere (not Linux;
 * Linux without bwrap, without apt-get or the rights to install it) `missing` says why, and the
 * files skip, naming it.
 */
import { execFileSync } from "node:child_process"
import { join } from "node:path"

const script = join(import.meta.dirname, "../../../../scripts/setup-bubblewrap.sh")

/** Whether `file args` exits 0 (its output dropped). */
const succeeds = (file: string, args: ReadonlyArray<string>) => {
  try {
    execFileSync(file, args, { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/** Whether `command` is on the PATH. */
const found = (command: string) => succeeds("sh", ["-c", `command -v ${command}`])

/**
 * Why bubblewrap cannot be had here, where the confinement tests do not run (not Linux; no bwrap,
 * and no apt-get or no rights to install it), or undefined once it is there. Throws where they run
 * and bubblewrap cannot be had.
 */
export const missing = (): string | undefined => {
  if (process.platform !== "linux") return `confinement runs on Linux (bubblewrap); this is ${process.platform}`
  /** How to run the script as root: as we are, through sudo without a password, or not at all. */
  const asRoot = process.getuid?.() === 0 ? [] : succeeds("sudo", ["-n", "true"]) ? ["sudo", "-n"] : undefined
  if (!found("bwrap")) {
    if (!found("apt-get")) return "bwrap is missing, and there is no apt-get to install it with (scripts/setup-bubblewrap.sh installs Debian's package)"
    if (asRoot === undefined) return "bwrap is missing, and installing it needs root: sudo apt-get install bubblewrap"
  }
  const [file, ...args] = [...(found("bwrap") ? [] : asRoot ?? []), "bash", script]
  try {
    execFileSync(file!, args, { stdio: ["ignore", "ignore", "pipe"] })
    return undefined
  } catch (error) {
    const why = String((error as { stderr?: unknown }).stderr ?? error).trim()
    throw new Error(`bubblewrap cannot be had on this Linux, where the confinement tests run (bwrap on the PATH, or apt-get as root): ${why}`)
  }
}
