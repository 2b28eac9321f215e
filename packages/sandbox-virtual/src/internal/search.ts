/**
 * search — the walks behind the virtual sandbox's `glob` and `grep`, over any just-bash
 * filesystem (so mounted host directories are searched like the in-memory tree).
 *
 * Both list regular files only: symlinks are neither followed nor reported (a link cannot lead a
 * search out of a mount), and a directory that cannot be listed holds nothing. `grep` reads the
 * files in path order and stops at `limit` matching lines, with the shared RE2 dialect
 * (`Sandbox.compilePattern`), yielding every 2 M characters matched so a large file cannot hold the
 * event loop; a line longer than 1 M characters is matched and reported on its first 1 M. It skips
 * binary files (a NUL byte in the first 8 KiB) silently, as ripgrep does, and reports in `skipped`
 * the files it could not read (a mount refuses files over its size cap: "too large").
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

/** Lines longer than this are matched and reported on their first this-many characters. */
const maxLineChars = 1024 * 1024
/** Characters matched between two yields, so a large file cannot hold the event loop. */
const sliceChars = 2 * 1024 * 1024

/** @since 0.1.0 @category models */
export interface GrepRequest {
  /** Absolute paths of the files to search, in the order to search them. */
  readonly files: ReadonlyArray<string>
  readonly pattern: Sandbox.LinePattern
  readonly limit: number
  /** The path reported for a file, from its absolute path. */
  readonly report: (absolute: string) => string
}

/** Why a read failed, in the words `skipped` uses: a mount's size cap is just-bash's EFBIG. */
const whyUnread = (cause: unknown): string =>
  cause instanceof Error && cause.message.startsWith("EFBIG") ? "too large" : "unreadable"

/** The text of one file being searched, and where the search stands in it. */
interface Scan {
  readonly path: string
  readonly text: string
  start: number
  lineNumber: number
}

/** Tests lines of `scan` until `sliceChars` are matched, the limit is reached or the text ends. */
const searchSlice = (scan: Scan, pattern: Sandbox.LinePattern, out: Array<Sandbox.GrepMatch>, limit: number): boolean => {
  const { text } = scan
  const stop = scan.start + sliceChars
  while (scan.start < text.length && out.length < limit) {
    if (scan.start >= stop) return false
    const newline = text.indexOf("\n", scan.start)
    const end = newline === -1 ? text.length : newline
    const raw = text.slice(scan.start, Math.min(end, scan.start + maxLineChars))
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw
    if (pattern.test(line)) out.push({ path: scan.path, lineNumber: scan.lineNumber, line })
    scan.lineNumber++
    scan.start = end + 1
  }
  return true
}

/**
 * Searches `request.files` in order, stopping at `limit` matching lines; files that could not be
 * read are reported in `skipped`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const grep = (fs: IFileSystem, request: GrepRequest): Effect.Effect<Sandbox.GrepResult> =>
  Effect.suspend(() => {
    const out: Array<Sandbox.GrepMatch> = []
    const skipped: Array<Sandbox.SkippedFile> = []
    let next = 0
    let scan: Scan | undefined
    const read = (file: string) =>
      Effect.match(Effect.tryPromise({ try: () => fs.readFileBuffer(file), catch: whyUnread }), {
        onFailure: (why) => void skipped.push({ path: request.report(file), why }),
        onSuccess: (bytes) => {
          if (bytes.subarray(0, binaryProbeBytes).includes(0)) return
          scan = { path: request.report(file), text: decoder.decode(bytes), start: 0, lineNumber: 1 }
        }
      })
    return Effect.as(
      Effect.whileLoop({
        while: () => out.length < request.limit && (scan !== undefined || next < request.files.length),
        body: () => {
          if (scan === undefined) return read(request.files[next++]!)
          const current = scan
          return Effect.andThen(
            Effect.sync(() => {
              if (searchSlice(current, request.pattern, out, request.limit)) scan = undefined
            }),
            Effect.yieldNow
          )
        },
        step: () => {}
      }),
      { matches: out, skipped }
    )
  })
