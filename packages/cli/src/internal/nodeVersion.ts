/**
 * nodeVersion — the Node.js the CLI runs on: 22.19 or newer (`engines`), refused in one sentence
 * otherwise. It imports nothing, so `bin` checks before loading a module an older Node cannot run
 * (on Node 20 the HTTP client breaks when the layers are built, and the workspace's `.ts` files
 * do not load at all).
 */

/** The oldest Node.js the packages run on, as [major, minor]. */
const MINIMUM = [22, 19] as const

/**
 * The refusal for Node.js `version` (`process.versions.node`), or undefined when it is new enough.
 */
export const refusal = (version: string): string | undefined => {
  const [major = 0, minor = 0] = version.split(".").map(Number)
  const supported = major > MINIMUM[0] || (major === MINIMUM[0] && minor >= MINIMUM[1])
  return supported ? undefined : `Condukt needs Node.js ${MINIMUM[0]}.${MINIMUM[1]} or newer; this is Node.js ${version}.`
}
