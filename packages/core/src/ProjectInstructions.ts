/**
 * ProjectInstructions — what a project tells agents about itself, read by a session's first run.
 *
 * Read through the session's Sandbox, so they come from wherever its files are (a host
 * directory, a Virtual sandbox's memory): `AGENTS.md` and `CLAUDE.md` at the sandbox's cwd
 * (trimmed, empty ones dropped, identical ones kept once, as a CLAUDE.md symlinked to AGENTS.md
 * is), and the skills under `.agents/skills/*\/SKILL.md` (sorted; `name` and `description` from a
 * minimal `---` frontmatter of `key: value` lines, `name` defaulting to the skill's folder). The
 * prompt has a "## Project Instructions" section and an "## Available Skills" section listing each
 * skill's file, whose body the model reads when it needs it (Condukt §1.16). Absent files are no
 * instructions; a file that cannot be read is logged and left out: instructions never fail a
 * run.
 */
import { Clock, Effect } from "effect"
import * as Tracing from "./internal/tracing.ts"
import * as Sandbox from "./Sandbox.ts"

/** The files read at the sandbox's cwd, in this order. */
export const FILES = ["AGENTS.md", "CLAUDE.md"] as const

/** Where skills are found, relative to the sandbox's cwd. */
export const SKILLS_GLOB = ".agents/skills/*/SKILL.md"

/** The folder holding one folder per skill. */
const SKILLS_DIRECTORY = ".agents/skills"

/** What the instructions section says before the project's own text. */
export const PREAMBLE = "The project you work in gives these instructions (from its AGENTS.md / CLAUDE.md). Follow them."

/** @since 0.1.0 @category models */
export interface Skill {
  readonly name: string
  readonly description: string | undefined
  /** The SKILL.md file, relative to the sandbox's cwd. */
  readonly path: string
}

/**
 * `key: value` lines between a leading `---` line and the next one; surrounding quotes are dropped.
 *
 * @since 0.1.0
 * @category parsing
 */
export const frontmatter = (text: string): Readonly<Record<string, string>> => {
  const lines = text.split(/\r?\n/)
  if (lines[0]?.trim() !== "---") return {}
  const fields: Record<string, string> = {}
  for (let i = 1; i < lines.length && lines[i]!.trim() !== "---"; i++) {
    const match = /^([A-Za-z0-9_-]+)\s*:\s*(.*)$/.exec(lines[i]!)
    if (match === null) continue
    const value = match[2]!.trim()
    fields[match[1]!] = /^(["']).*\1$/.test(value) ? value.slice(1, -1) : value
  }
  return fields
}

/**
 * The project prompt for these instructions and skills; `undefined` when there are neither.
 *
 * @since 0.1.0
 * @category constructors
 */
export const prompt = (instructions: ReadonlyArray<string>, skills: ReadonlyArray<Skill>): string | undefined => {
  const sections: Array<string> = []
  if (instructions.length > 0) sections.push(["## Project Instructions", PREAMBLE, ...instructions].join("\n\n"))
  if (skills.length > 0) {
    const lines = skills.map((skill) =>
      `- \`${skill.name}\` (read \`${skill.path}\` before using it)${skill.description ? ` - ${skill.description}` : ""}`
    )
    sections.push(`## Available Skills\n\n${lines.join("\n")}`)
  }
  return sections.length === 0 ? undefined : sections.join("\n\n")
}

/**
 * The system prompt a session sends: the configured one, a blank line, the project's.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withProject = (system: string | undefined, project: string | undefined): string | undefined => {
  if (project === undefined) return system
  return system === undefined || system.trim() === "" ? project : `${system}\n\n${project}`
}

/** The file's text; `undefined` when it is absent or unreadable (then logged). */
const readOptional = (sandbox: Sandbox.Service, path: string) =>
  sandbox.read(path).pipe(
    Effect.map((text): string | undefined => text),
    Effect.catch((error) =>
      error.reason._tag === "NotFound"
        ? Effect.succeed(undefined)
        : Effect.as(Effect.logWarning(`Project instructions: ${path} left out: ${error.message}`), undefined)
    )
  )

const skill = (path: string, text: string | undefined): ReadonlyArray<Skill> => {
  if (text === undefined) return []
  const fields = frontmatter(text)
  const folder = path.split("/").at(-2) ?? path
  return [{ name: fields["name"] || folder, description: fields["description"] || undefined, path }]
}

/** The prompt of these files' texts (the instruction files first, in `FILES` order, then the skills, sorted). */
const promptOf = (texts: ReadonlyArray<string | undefined>, skillTexts: ReadonlyArray<readonly [string, string | undefined]>) => {
  const instructions: Array<string> = []
  for (const text of texts) {
    const trimmed = text?.trim()
    if (trimmed !== undefined && trimmed !== "" && !instructions.includes(trimmed)) instructions.push(trimmed)
  }
  return prompt(instructions, skillTexts.flatMap(([path, text]) => skill(path, text)))
}

// ---------------------------------------------------------------------------------------------
// A sandbox that can list and stat: one listing, and files read again only when they changed
// ---------------------------------------------------------------------------------------------

/** A file's text as last read, and the size and modification time it had then. */
interface Read {
  readonly stamp: string
  readonly text: string | undefined
}

/**
 * What each sandbox's files held when they were last read, by path. Keyed by the service, so it
 * lives exactly as long as the sandbox does; a sandbox layer built for many sessions shares one
 * service (LocalSandbox does), so they share this too.
 */
const reads = new WeakMap<Sandbox.Service, Map<string, Read>>()

/**
 * How recent a modification is too recent to trust: a filesystem's clock ticks coarsely (a few
 * milliseconds on Linux, seconds on some network filesystems), so a file written again within a
 * tick of its last write, at the same size, would look unchanged. Files modified this recently
 * are read every time, not remembered (git's "racily clean" rule).
 */
export const RECENT_MS = 2_000

/** The file's text, read again only when its size or modification time moved since the last read. */
const readCached = (sandbox: Sandbox.Service, seen: Map<string, Read>, path: string, now: number) =>
  sandbox.stat(path).pipe(
    Effect.flatMap((info): Effect.Effect<string | undefined> => {
      // Not a file: the read says why (logged), as it would without the listing.
      if (info.type !== "file") return readOptional(sandbox, path)
      const stamp = `${info.size}:${info.modified}`
      const known = seen.get(path)
      if (known?.stamp === stamp) return Effect.succeed(known.text)
      const read = readOptional(sandbox, path)
      if (now - info.modified < RECENT_MS) {
        seen.delete(path)
        return read
      }
      return Effect.tap(read, (text) => Effect.sync(() => seen.set(path, { stamp, text })))
    }),
    Effect.catch((error) =>
      error.reason._tag === "NotFound"
        ? Effect.succeed(undefined)
        : Effect.as(Effect.logWarning(`Project instructions: ${path} left out: ${error.message}`), undefined)
    )
  )

/** The skill folders under `.agents/skills` (real directories, as the glob walk finds them), sorted as paths. */
const skillFiles = (sandbox: Sandbox.Service) =>
  sandbox.list(SKILLS_DIRECTORY).pipe(
    Effect.map((entries) =>
      entries.filter((entry) => entry.type === "directory")
        .map((entry) => `${SKILLS_DIRECTORY}/${entry.name}/SKILL.md`)
        .sort()
        .slice(0, Sandbox.DEFAULT_GLOB_LIMIT)
    ),
    Effect.catch((error) =>
      error.reason._tag === "NotFound"
        ? Effect.succeed([])
        : Effect.as(Effect.logWarning(`Project instructions: skills left out: ${error.message}`), [])
    )
  )

const loadListed = (sandbox: Sandbox.Service, entries: ReadonlyArray<Sandbox.DirectoryEntry>, now: number) => {
  const present = new Set(entries.map((entry) => entry.name))
  const files = FILES.filter((file) => present.has(file))
  const hasSkills = entries.some((entry) => entry.name === ".agents" && (entry.type === "directory" || entry.type === "symlink"))
  if (files.length === 0 && !hasSkills) return Effect.succeed(undefined)
  let seen = reads.get(sandbox)
  if (seen === undefined) reads.set(sandbox, seen = new Map())
  const known = seen
  return Effect.map(
    Effect.all([
      Effect.forEach(files, (file) => readCached(sandbox, known, file, now), { concurrency: "unbounded" }),
      hasSkills
        ? Effect.flatMap(skillFiles(sandbox), (paths) =>
          Effect.forEach(paths, (path) => Effect.map(readCached(sandbox, known, path, now), (text) => [path, text] as const), {
            concurrency: "unbounded"
          }))
        : Effect.succeed([])
    ]),
    ([texts, skills]) => {
      // Forget files no longer there (a removed skill), so the table holds what the project has.
      const kept = new Set<string>([...files, ...skills.map(([path]) => path)])
      for (const path of known.keys()) if (!kept.has(path)) known.delete(path)
      return promptOf(texts, skills)
    }
  )
}

// ---------------------------------------------------------------------------------------------
// Any other sandbox: each name read, the skills globbed
// ---------------------------------------------------------------------------------------------

const skillsOf = (sandbox: Sandbox.Service) =>
  sandbox.glob(SKILLS_GLOB).pipe(
    Effect.catch((error) =>
      error.reason._tag === "NotFound" || error.reason._tag === "NotSupported"
        ? Effect.succeed([])
        : Effect.as(Effect.logWarning(`Project instructions: skills left out: ${error.message}`), [])
    ),
    Effect.flatMap((paths) =>
      Effect.forEach([...paths].sort(), (path) => Effect.map(readOptional(sandbox, path), (text) => [path, text] as const))
    )
  )

const loadEach = (sandbox: Sandbox.Service) =>
  Effect.map(
    Effect.all([Effect.forEach(FILES, (file) => readOptional(sandbox, file)), skillsOf(sandbox)]),
    ([texts, skills]) => promptOf(texts, skills)
  )

/**
 * The project prompt of the sandbox's cwd, or `undefined` when it has no instructions or skills.
 *
 * On a sandbox that can `list` and `stat` (LocalSandbox), its cwd is listed once and only the
 * files it has are looked at; a file is read again only when its size or modification time
 * changed since this sandbox last read it (or changed less than `RECENT_MS` ago), so sessions
 * started by the thousand on one sandbox read AGENTS.md once and an edited one is still picked
 * up by the next. Elsewhere each name is
 * read and the skills are globbed.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = (sandbox: Sandbox.Service): Effect.Effect<string | undefined> => Tracing.span(loading(sandbox), "ProjectInstructions.load")

// A span only under a real tracer (`internal/tracing.ts`): under the default one a span per
// session's first run cost more than the listing itself (~8 µs against ~5).
const loading = Effect.fnUntraced(function*(sandbox: Sandbox.Service) {
  const listed = yield* sandbox.list(".").pipe(
    Effect.map((entries): ReadonlyArray<Sandbox.DirectoryEntry> | undefined => entries),
    Effect.catch((error) =>
      error.reason._tag === "NotSupported"
        ? Effect.succeed(undefined)
        : Effect.as(Effect.logWarning(`Project instructions: left out: ${error.message}`), [])
    )
  )
  return yield* (listed === undefined ? loadEach(sandbox) : loadListed(sandbox, listed, yield* Clock.currentTimeMillis))
})
