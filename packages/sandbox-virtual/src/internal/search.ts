/**
 * search — the walks behind the virtual sandbox's `glob` and `grep`, over any just-bash
 * filesystem (so mounted host directories are searched like the in-memory tree).
 *
 * Both list regular files only: symlinks are neither followed nor reported (a link cannot lead a
 * search out of a mount), and a directory that cannot be listed holds nothing. `grep` reads the
 * files in path order and stops at `limit` matching lines; it skips binary files (a NUL byte in
 * the first 8 KiB) and files a mount refuses to read (over its size cap), as ripgrep skips them.
 */
import type { GlobPattern, Sandbox } from "@condukt/core"
import { Effect } from "effect"
import type { FsStat, IFileSystem } from "just-bash"

interface Entry {
  readonly name: string
  readonly stat: FsStat | undefined
}

const binaryProbeBytes = 8192
const decoder = new TextDecoder("utf-8", { ignoreBOM: false })

/**
 * `parent/name` for absolute virtual paths.
 *
 * @since 0.1.0
 * @category combinators
 */
export const join = (parent: string, name: string): string =>
  parent === "" ? name : parent === "/" ? `/${name}` : `${parent}/${name}`

/** The entries of `directory`, each with its own (not its target's) type; none when unreadable. */
const list = (fs: IFileSystem, directory: string): Effect.Effect<ReadonlyArray<Entry>> =>
  Effect.orElseSucceed(
    Effect.tryPromise(() =>
      fs.readdir(directory).then((names) =>
        Promise.all(names.map((name) =>
          fs.lstat(join(directory, name)).then(
            (stat): Entry => ({ name, stat }),
            (): Entry => ({ name, stat: undefined })
          )
        ))
      )
    ),
    () => []
  )

/**
 * The regular files below `start` (an absolute directory) that `glob` admits, as paths relative
 * to the walk's root (`prefix` is `start` relative to it, literal directories of the pattern),
 * sorted. Directories the pattern cannot match below are not listed.
 *
 * @since 0.1.0
 * @category combinators
 */
export const files = (
  fs: IFileSystem,
  start: string,
  prefix: string,
  glob: GlobPattern.GlobPattern
): Effect.Effect<Array<string>> => {
  const found: Array<string> = []
  const visit = (directory: string, relative: string, state: GlobPattern.State): Effect.Effect<void> =>
    Effect.flatMap(list(fs, directory), (entries) =>
      Effect.forEach(entries, ({ name, stat }) => {
        const path = join(relative, name)
        if (stat?.isDirectory === true && !stat.isSymbolicLink) {
          const inside = glob.enter(state, name)
          return inside === undefined ? Effect.void : visit(join(directory, name), path, inside)
        }
        if (stat?.isFile === true && !stat.isSymbolicLink && glob.matches(state, name)) found.push(path)
        return Effect.void
      }, { discard: true }))
  const state = prefix === ""
    ? glob.root
    : prefix.split("/").reduce<GlobPattern.State | undefined>(
      (reached, name) => reached === undefined ? undefined : glob.enter(reached, name),
      glob.root
    )
  return state === undefined ? Effect.succeed([]) : Effect.map(visit(start, prefix, state), () => found.sort())
}

/** Appends the lines of `text` that `regex` matches to `out`, until it holds `limit`. */
const searchText = (text: string, regex: RegExp, path: string, out: Array<Sandbox.GrepMatch>, limit: number): void => {
  const lines = text.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  for (let i = 0; i < lines.length && out.length < limit; i++) {
    const raw = lines[i]!
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw
    if (regex.test(line)) out.push({ path, lineNumber: i + 1, line })
  }
}

/** @since 0.1.0 @category models */
export interface GrepRequest {
  /** Absolute paths of the files to search, in the order to search them. */
  readonly files: ReadonlyArray<string>
  /** Tested line by line; must not be global or sticky. */
  readonly regex: RegExp
  readonly limit: number
  /** The path reported for a file, from its absolute path. */
  readonly report: (absolute: string) => string
}

/**
 * Searches `request.files` in order, stopping at `limit` matching lines.
 *
 * @since 0.1.0
 * @category combinators
 */
export const grep = (fs: IFileSystem, request: GrepRequest): Effect.Effect<Array<Sandbox.GrepMatch>> =>
  Effect.suspend(() => {
    const out: Array<Sandbox.GrepMatch> = []
    let next = 0
    return Effect.as(
      Effect.whileLoop({
        while: () => next < request.files.length && out.length < request.limit,
        body: () => {
          const file = request.files[next++]!
          return Effect.orElseSucceed(Effect.tryPromise(() => fs.readFileBuffer(file)), () => undefined)
        },
        step: (bytes) => {
          if (bytes === undefined || bytes.subarray(0, binaryProbeBytes).includes(0)) return
          const file = request.files[next - 1]!
          searchText(decoder.decode(bytes), request.regex, request.report(file), out, request.limit)
        }
      }),
      out
    )
  })
