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
import { Effect } from "effect"
import type * as Sandbox from "./Sandbox.ts"

/** The files read at the sandbox's cwd, in this order. */
export const FILES = ["AGENTS.md", "CLAUDE.md"] as const

/** Where skills are found, relative to the sandbox's cwd. */
export const SKILLS_GLOB = ".agents/skills/*/SKILL.md"

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

const skillsOf = (sandbox: Sandbox.Service) =>
  sandbox.glob(SKILLS_GLOB).pipe(
    Effect.catch((error) =>
      error.reason._tag === "NotFound" || error.reason._tag === "NotSupported"
        ? Effect.succeed([])
        : Effect.as(Effect.logWarning(`Project instructions: skills left out: ${error.message}`), [])
    ),
    Effect.flatMap((paths) =>
      Effect.forEach([...paths].sort(), (path) =>
        Effect.map(readOptional(sandbox, path), (text): ReadonlyArray<Skill> => {
          if (text === undefined) return []
          const fields = frontmatter(text)
          const folder = path.split("/").at(-2) ?? path
          return [{ name: fields["name"] || folder, description: fields["description"] || undefined, path }]
        }))
    ),
    Effect.map((skills) => skills.flat())
  )

/**
 * The project prompt of the sandbox's cwd, or `undefined` when it has no instructions or skills.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = Effect.fn("ProjectInstructions.load")(function*(sandbox: Sandbox.Service) {
  const texts = yield* Effect.forEach(FILES, (file) => readOptional(sandbox, file))
  const instructions: Array<string> = []
  for (const text of texts) {
    const trimmed = text?.trim()
    if (trimmed !== undefined && trimmed !== "" && !instructions.includes(trimmed)) instructions.push(trimmed)
  }
  return prompt(instructions, yield* skillsOf(sandbox))
})
