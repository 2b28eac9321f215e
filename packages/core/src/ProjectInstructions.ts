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
import * as Tracing from "./Tracing.ts"
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

/** The prompt of the instruction files' texts (in `FILES` order) and the skills (sorted). */
const promptOf = (texts: ReadonlyArray<string | undefined>, skills: ReadonlyArray<Skill>) => {
  const instructions: Array<string> = []
  for (const text of texts) {
    const trimmed = text?.trim()
    if (trimmed !== undefined && trimmed !== "" && !instructions.includes(trimmed)) instructions.push(trimmed)
  }
  return prompt(instructions, skills)
}

// ---------------------------------------------------------------------------------------------
// A sandbox that can list and stat: what is unchanged is not read again
// ---------------------------------------------------------------------------------------------

/** What was made of a path (a directory's relevant entries, a file's text, a skill), and the stamp the path had then. */
interface Known<A> {
  readonly stamp: string
  readonly value: A
}

/**
 * What one sandbox made of its files, by path: the relevant entries of the two directories
 * looked into (not their whole listings), the instruction files' texts, the skills' names and
 * descriptions (not their bodies). So it stays small whatever the project holds.
 */
interface Memory {
  readonly listings: Map<string, Known<ReadonlyArray<string>>>
  readonly texts: Map<string, Known<string | undefined>>
  readonly skills: Map<string, Known<ReadonlyArray<Skill>>>
}

/**
 * Each sandbox's memory, keyed by the service, so it lives exactly as long as the sandbox does; a
 * sandbox layer built for many sessions shares one service (LocalSandbox does), so they share this too.
 */
const memories = new WeakMap<Sandbox.Service, Memory>()

const memoryOf = (sandbox: Sandbox.Service): Memory => {
  let memory = memories.get(sandbox)
  if (memory === undefined) memories.set(sandbox, memory = { listings: new Map(), texts: new Map(), skills: new Map() })
  return memory
}

/**
 * How recent a modification is too recent to trust: a filesystem's clock ticks coarsely (a few
 * milliseconds on Linux, seconds on some network filesystems), so a file written again within a
 * tick of its last write, at the same size, would look unchanged. What was modified this recently
 * is read every time, not remembered (git's "racily clean" rule).
 */
export const RECENT_MS = 2_000

/**
 * `make` for `path` as `info` shows it: what was made before while its size and modification time
 * are the same, made again (and remembered unless modified within `RECENT_MS`) when they moved.
 */
const remembered = <A, E>(
  table: Map<string, Known<A>>,
  path: string,
  info: Sandbox.FileInfo,
  now: number,
  make: () => Effect.Effect<A, E>
): Effect.Effect<A, E> => {
  const stamp = `${info.type}:${info.size}:${info.modified}`
  const known = table.get(path)
  if (known?.stamp === stamp) return Effect.succeed(known.value)
  if (now - info.modified < RECENT_MS) {
    table.delete(path)
    return make()
  }
  return Effect.tap(make(), (value) => Effect.sync(() => table.set(path, { stamp, value })))
}

/** A failure to look at `path`: nothing there is nothing to read; anything else is logged and left out. */
const leftOut = <A>(path: string, none: A) => (error: Sandbox.SandboxError): Effect.Effect<A> =>
  error.reason._tag === "NotFound"
    ? Effect.succeed(none)
    : Effect.as(Effect.logWarning(`Project instructions: ${path} left out: ${error.message}`), none)

/** `make` of what `path` is now, through `table`; `none` when it is absent or cannot be looked at. */
const through = <A>(
  sandbox: Sandbox.Service,
  table: Map<string, Known<A>>,
  path: string,
  now: number,
  none: A,
  make: () => Effect.Effect<A, Sandbox.SandboxError>
) =>
  sandbox.stat(path).pipe(
    Effect.flatMap((info) => remembered(table, path, info, now, make)),
    Effect.catch(leftOut(path, none))
  )

/** The names of `FILES` and `.agents` the cwd (as `info` shows it) has: its listing, only when it changed. */
const cwdNames = (sandbox: Sandbox.Service, memory: Memory, info: Sandbox.FileInfo, now: number) =>
  remembered(memory.listings, ".", info, now, () =>
    Effect.map(sandbox.list("."), (entries) =>
      entries.flatMap((entry) =>
        (FILES as ReadonlyArray<string>).includes(entry.name) ||
          (entry.name === ".agents" && (entry.type === "directory" || entry.type === "symlink"))
          ? [entry.name]
          : []
      ))).pipe(Effect.catch(leftOut<ReadonlyArray<string>>(".", [])))

/** The skill files: one per folder of `.agents/skills` (real directories, as the glob walk finds them), sorted as paths, at most the glob's limit. */
const skillFiles = (sandbox: Sandbox.Service, memory: Memory, now: number) =>
  through(sandbox, memory.listings, SKILLS_DIRECTORY, now, [], () =>
    Effect.map(sandbox.list(SKILLS_DIRECTORY), (entries) =>
      entries.filter((entry) => entry.type === "directory")
        .map((entry) => `${SKILLS_DIRECTORY}/${entry.name}/SKILL.md`)
        .sort()
        .slice(0, Sandbox.DEFAULT_GLOB_LIMIT)))

/** An instruction file's text; one that is not a regular file fails its read, which says why (logged). */
const text = (sandbox: Sandbox.Service, memory: Memory, path: string, now: number) =>
  through(sandbox, memory.texts, path, now, undefined, () => readOptional(sandbox, path))

const skillAt = (sandbox: Sandbox.Service, memory: Memory, path: string, now: number) =>
  through(sandbox, memory.skills, path, now, [], () => Effect.map(readOptional(sandbox, path), (body) => skill(path, body)))

const loadKnown = (sandbox: Sandbox.Service, cwd: Sandbox.FileInfo, now: number) => {
  const memory = memoryOf(sandbox)
  return Effect.flatMap(cwdNames(sandbox, memory, cwd, now), (names) => {
    if (names.length === 0) return Effect.succeed(undefined)
    const files = FILES.filter((file) => names.includes(file))
    const skills = names.includes(".agents")
      ? Effect.flatMap(skillFiles(sandbox, memory, now), (paths) => {
        // Forget the skills no longer there, so the memory holds what the project has.
        const current = new Set(paths)
        for (const path of memory.skills.keys()) if (!current.has(path)) memory.skills.delete(path)
        return Effect.forEach(paths, (path) => skillAt(sandbox, memory, path, now), { concurrency: "unbounded" })
      })
      : Effect.succeed([])
    return Effect.map(
      Effect.all([Effect.forEach(files, (file) => text(sandbox, memory, file, now), { concurrency: "unbounded" }), skills]),
      ([texts, found]) => promptOf(texts, found.flat())
    )
  })
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
    Effect.flatMap((paths) => Effect.forEach([...paths].sort(), (path) => Effect.map(readOptional(sandbox, path), (body) => skill(path, body))))
  )

const loadEach = (sandbox: Sandbox.Service) =>
  Effect.map(
    Effect.all([Effect.forEach(FILES, (file) => readOptional(sandbox, file)), skillsOf(sandbox)]),
    ([texts, skills]) => promptOf(texts, skills.flat())
  )

/**
 * The project prompt of the sandbox's cwd, or `undefined` when it has no instructions or skills.
 *
 * On a sandbox that can `list` and `stat` (LocalSandbox), what was seen is remembered per sandbox
 * by path with its size and modification time: the cwd is listed only when it changed (a stat
 * otherwise), only the files it has are looked at, and a file is read again only when it changed
 * (or changed less than `RECENT_MS` ago). So sessions started by the thousand on one sandbox read
 * AGENTS.md once, an edited one is picked up by the next, and a directory without instructions
 * costs a stat. Elsewhere each name is read and the skills are globbed.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = (sandbox: Sandbox.Service): Effect.Effect<string | undefined> => Tracing.span(loading(sandbox), "ProjectInstructions.load")

// A span only under a real tracer (`Tracing.ts`): under the default one a span per
// session's first run cost more than the listing itself (~8 µs against ~5).
const loading = (sandbox: Sandbox.Service): Effect.Effect<string | undefined> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.matchEffect(sandbox.stat("."), {
      onFailure: (error) => error.reason._tag === "NotSupported" ? loadEach(sandbox) : leftOut(".", undefined)(error),
      onSuccess: (cwd) => loadKnown(sandbox, cwd, now)
    }))
