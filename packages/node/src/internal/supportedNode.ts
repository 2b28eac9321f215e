/**
 * supportedNode — the Node.js release this package needs, checked once when it is imported.
 *
 * The host packages build on @effect/platform-node-shared, whose `engines` ask for Node.js 22.19 or
 * newer, and on Node's `fetch`, `node:sqlite` and type stripping as 22.19 has them; on an older Node a
 * program imports fine and crashes later, far from the cause. So the import stops the program
 * first: one sentence on stderr naming the release needed and the one running, and exit code 1.
 * Bun and Deno report a Node release of their own choosing and are not Node: they are left alone.
 * A `.ts` program on a Node without type stripping (20) fails before this module loads, with Node's
 * `ERR_UNKNOWN_FILE_EXTENSION`: docs/your-project.md names it and the one line to Node 22.
 */

/** The oldest Node.js release the host packages run on (`engines` in their package.json). */
export const minimum = { major: 22, minor: 19 } as const

/** The sentence refusing Node.js `version` (`process.versions.node`), or undefined when it is supported. */
export const refusal = (version: string): string | undefined => {
  const [major = 0, minor = 0] = version.split(".").map(Number)
  return major > minimum.major || (major === minimum.major && minor >= minimum.minor)
    ? undefined
    : `Condukt needs Node.js ${minimum.major}.${minimum.minor} or newer; this is Node.js ${version}.`
}

const refused = process.versions["bun"] === undefined && process.versions["deno"] === undefined
  ? refusal(process.versions.node)
  : undefined

if (refused !== undefined) {
  process.stderr.write(`${refused}\n`)
  process.exit(1)
}
