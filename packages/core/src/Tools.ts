/**
 * Tools — the built-in tools and the sets agents usually take: `coding` (read, run, change files)
 * and `readOnly` (no Edit or Write, though Bash can still change what the sandbox lets it).
 * `Command` builds a tool per trusted executable, so it belongs to no set. Each tool lives in its
 * own module under `tools/`; this module only gathers them.
 */
import type * as Tool from "./Tool.ts"
import { Bash } from "./tools/Bash.ts"
import { Command } from "./tools/Command.ts"
import { Edit } from "./tools/Edit.ts"
import { Glob } from "./tools/Glob.ts"
import { Grep } from "./tools/Grep.ts"
import { Read } from "./tools/Read.ts"
import { Write } from "./tools/Write.ts"

export { Bash, Command, Edit, Glob, Grep, Read, Write }

/**
 * Read, Bash, Edit, Write, Glob, Grep.
 *
 * @since 0.1.0
 * @category models
 */
export const coding: ReadonlyArray<Tool.Tool> = [Read, Bash, Edit, Write, Glob, Grep]

/**
 * Read, Bash, Glob, Grep.
 *
 * @since 0.1.0
 * @category models
 */
export const readOnly: ReadonlyArray<Tool.Tool> = [Read, Bash, Glob, Grep]
