/**
 * rm — the virtual shell's `rm`, replacing just-bash's, whose `-f` swallows every failure: `rm -rf`
 * on a read-only mount exits 0 and the model is told the files are gone. Here `-f` does what
 * POSIX says and no more: a missing operand, or no operand at all, is not an error. Anything else
 * (a read-only mount, a directory without `-r`) is reported the same with or without `-f`.
 *
 * Flags: `-r`/`-R`/`--recursive`, `-f`/`--force`, `-v`/`--verbose`, combined (`-rf`), and `--`.
 * Messages keep just-bash's wording for the rest of its commands to match.
 */
import { defineCommand, type ExecResult, type IFileSystem } from "just-bash"
import { messageOf } from "./thrown.ts"

interface Flags {
  recursive: boolean
  force: boolean
  verbose: boolean
}

const longFlags: Readonly<Record<string, keyof Flags>> = { recursive: "recursive", force: "force", verbose: "verbose" }
const shortFlags: Readonly<Record<string, keyof Flags>> = { r: "recursive", R: "recursive", f: "force", v: "verbose" }

/** The flags and operands, or the complaint about an unknown option. */
const parse = (args: ReadonlyArray<string>): { flags: Flags; operands: Array<string> } | string => {
  const flags: Flags = { recursive: false, force: false, verbose: false }
  const operands: Array<string> = []
  let options = true
  for (const arg of args) {
    if (!options || arg === "-" || !arg.startsWith("-")) operands.push(arg)
    else if (arg === "--") options = false
    else if (arg.startsWith("--")) {
      const flag = longFlags[arg.slice(2)]
      if (flag === undefined) return `rm: unrecognized option '${arg}'\n`
      flags[flag] = true
    } else {
      for (const letter of arg.slice(1)) {
        const flag = shortFlags[letter]
        if (flag === undefined) return `rm: invalid option -- '${letter}'\n`
        flags[flag] = true
      }
    }
  }
  return { flags, operands }
}

const isMissing = (cause: unknown) => /ENOENT|no such file/i.test(messageOf(cause))

const describe = (cause: unknown): string => {
  const message = messageOf(cause)
  if (isMissing(cause)) return "No such file or directory"
  if (/ENOTEMPTY|not empty/i.test(message)) return "Directory not empty"
  return message
}

/** What removing one operand printed: stdout, stderr, and whether it failed. */
interface Outcome {
  readonly out: string
  readonly err: string
  readonly failed: boolean
}

const removeOne = (fs: IFileSystem, cwd: string, operand: string, flags: Flags): Promise<Outcome> => {
  const path = fs.resolvePath(cwd, operand)
  const failed = (cause: unknown): Outcome =>
    flags.force && isMissing(cause)
      ? { out: "", err: "", failed: false }
      : { out: "", err: `rm: cannot remove '${operand}': ${describe(cause)}\n`, failed: true }
  return fs.stat(path).then(
    (stat) =>
      stat.isDirectory && !flags.recursive
        ? { out: "", err: `rm: cannot remove '${operand}': Is a directory\n`, failed: true }
        : fs.rm(path, { recursive: flags.recursive, force: flags.force }).then(
          (): Outcome => ({ out: flags.verbose ? `removed '${operand}'\n` : "", err: "", failed: false }),
          failed
        ),
    failed
  )
}

/**
 * The `rm` command for just-bash's `customCommands`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const command = defineCommand("rm", (args, context): Promise<ExecResult> => {
  const parsed = parse(args)
  if (typeof parsed === "string") return Promise.resolve({ stdout: "", stderr: parsed, exitCode: 1 })
  const { flags, operands } = parsed
  if (operands.length === 0) {
    return Promise.resolve(
      flags.force ? { stdout: "", stderr: "", exitCode: 0 } : { stdout: "", stderr: "rm: missing operand\n", exitCode: 1 }
    )
  }
  // One operand after another, as rm does: the messages come out in order.
  return operands.reduce<Promise<Array<Outcome>>>(
    (done, operand) =>
      done.then((outcomes) => removeOne(context.fs, context.cwd, operand, flags).then((outcome) => [...outcomes, outcome])),
    Promise.resolve([])
  ).then((outcomes) => ({
    stdout: outcomes.map((o) => o.out).join(""),
    stderr: outcomes.map((o) => o.err).join(""),
    exitCode: outcomes.some((o) => o.failed) ? 1 : 0
  }))
})
