/**
 * grepFiles — the search behind `LocalSandbox.grep`: walk a directory (or take one file), keep
 * the regular files the glob filter admits (`walkFiles.ts`), and report each line the RE2 pattern
 * (`Sandbox.compilePattern`) matches, in path order, stopping once `limit` lines are found.
 *
 * Files are streamed in 64 KiB chunks, never read whole, so a file of any size costs one chunk of
 * memory and the work is cut into slices (by bytes read and bytes matched) with a yield between
 * them: other fibers run, and a timeout or an interruption lands inside a huge file, not after it.
 * A line longer than `MAX_LINE_BYTES` is matched, and reported, on its first `MAX_LINE_BYTES`.
 *
 * It refuses binary files (a NUL byte in the first 8 KiB, silently, as ripgrep does) and anything
 * that is not a regular file once opened (opened non-blocking and checked with fstat, so a FIFO
 * swapped in after the walk never pins a thread). A file that cannot be opened or read is reported
 * in `skipped`, so the model never reads "no matches" for a file nobody searched.
 *
 * Most files are rejected on their raw bytes, for lacking text every match must contain
 * (`prefilter.ts`), before anything is decoded or handed to RE2; within a file, only the lines
 * holding that text are decoded, and RE2 is skipped when the pattern is exactly that text.
 */
import * as NodeFs from "node:fs"
import { Effect, Result } from "effect"
import * as GlobPattern from "@condukt/core/GlobPattern"
import {
  compilePattern,
  type Failed,
  type GrepMatch,
  type GrepResult,
  InvalidPattern,
  type LinePattern,
  type PermissionDenied,
  type SkippedFile
} from "@condukt/core/Sandbox"
import * as Prefilter from "./prefilter.ts"
import * as WalkFiles from "./walkFiles.ts"

/** A compiled pattern; `prefilter` lets most files be rejected on their bytes, before decoding. */
export interface Pattern {
  /** Finds, on raw bytes, text every match contains, so every matching line too. */
  readonly prefilter: Prefilter.Prefilter | undefined
  readonly line: LinePattern
}

/** Lines longer than this are matched and reported on their first this-many bytes. */
export const MAX_LINE_BYTES = 1024 * 1024

const binaryProbeBytes = 8192
const chunkBytes = 65536
const sliceFiles = 256
/** Work per slice: bytes read, plus bytes decoded and matched counted eight times (RE2 is slower). */
const sliceWork = 16 * 1024 * 1024
const matchCost = 8
/**
 * Bytes searched by a prefilter, counted four times: in hostile text (a byte class's anchor, or
 * `aaaa` in a run of `a`) every byte is a hit, and each hit costs a call from JavaScript.
 */
const prefilterCost = 4

/**
 * Compiles `pattern` with the shared dialect, or fails with its reason.
 *
 * @since 0.1.0
 * @category constructors
 */
export const compile = (pattern: string, caseSensitive: boolean): Result.Result<Pattern, string> =>
  Result.map(compilePattern(pattern, caseSensitive), (line): Pattern => ({ prefilter: Prefilter.make(pattern, caseSensitive), line }))

const hasByteOrderMark = (bytes: Buffer): boolean => bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf

/** The state of one file being searched, kept across slices. */
interface Scan {
  readonly fd: number
  readonly path: string
  position: number
  lineNumber: number
  /** How many bytes of `Search.carry` hold the start of the line the previous chunk ended in. */
  carried: number
  /** The current line passed `MAX_LINE_BYTES` and was matched: drop bytes up to its end. */
  dropping: boolean
  /** Still looking for a prefilter candidate anywhere in the file, before searching its lines. */
  probing: boolean
}

interface Search {
  readonly pattern: Pattern
  readonly limit: number
  readonly out: Array<GrepMatch>
  readonly chunk: Buffer
  /** The start of an unfinished line (at most `MAX_LINE_BYTES`), then the next chunk after it. */
  readonly carry: Buffer
  work: number
}

const pushLine = (search: Search, scan: Scan, text: string): void => {
  const capped = text.length > MAX_LINE_BYTES ? text.slice(0, MAX_LINE_BYTES) : text
  const line = capped.endsWith("\r") ? capped.slice(0, -1) : capped
  search.work += line.length * matchCost
  if (search.pattern.line.test(line)) search.out.push({ path: scan.path, lineNumber: scan.lineNumber, line })
}

/** Tests the line in `bytes` (no line break), which holds a prefilter candidate if there is a prefilter. */
const testLine = (search: Search, scan: Scan, bytes: Buffer): void => {
  if (search.pattern.prefilter?.exact !== true || bytes.length > MAX_LINE_BYTES) {
    return pushLine(search, scan, bytes.toString("utf8"))
  }
  // The candidate is a match, and the line is too short to be cut: RE2 has nothing to add.
  const text = bytes.toString("utf8")
  search.work += text.length
  search.out.push({ path: scan.path, lineNumber: scan.lineNumber, line: text.endsWith("\r") ? text.slice(0, -1) : text })
}

/** Matches the complete lines of `bytes` (each ending in `\n`, the last one possibly not). */
const searchLines = (search: Search, scan: Scan, bytes: Buffer): void => {
  const prefilter = search.pattern.prefilter
  if (prefilter === undefined) {
    const text = bytes.toString("utf8")
    let start = 0
    while (start < text.length && search.out.length < search.limit) {
      const newline = text.indexOf("\n", start)
      const end = newline === -1 ? text.length : newline
      pushLine(search, scan, text.slice(start, end))
      scan.lineNumber++
      start = end + 1
    }
    return
  }
  // Only the lines holding a candidate are decoded (and tested); the others are counted on bytes.
  const next = prefilter.over(bytes)
  search.work += bytes.length * prefilterCost
  let lineStart = 0
  for (let at = next(0); at !== -1 && search.out.length < search.limit;) {
    let newline = bytes.indexOf(10, lineStart)
    while (newline !== -1 && newline < at) {
      scan.lineNumber++
      lineStart = newline + 1
      newline = bytes.indexOf(10, lineStart)
    }
    testLine(search, scan, bytes.subarray(lineStart, newline === -1 ? bytes.length : newline))
    scan.lineNumber++
    if (newline === -1) return
    lineStart = newline + 1
    at = next(lineStart)
  }
  for (let newline = bytes.indexOf(10, lineStart); newline !== -1; newline = bytes.indexOf(10, newline + 1)) {
    scan.lineNumber++
  }
}

/** Searches the chunk just read (`got` bytes at `scan.position`) line by line; true once done. */
const searchChunk = (search: Search, scan: Scan, got: number): boolean => {
  const skip = scan.position === 0 && hasByteOrderMark(search.chunk) ? 3 : 0
  scan.position += got
  let data = search.chunk.subarray(skip, got)
  if (scan.dropping) {
    const newline = data.indexOf(10)
    if (newline === -1) return got === 0
    scan.dropping = false
    scan.lineNumber++
    data = data.subarray(newline + 1)
  }
  if (scan.carried > 0) {
    // Appended to the line carried over, so a long line is copied once, not once per chunk.
    data.copy(search.carry, scan.carried)
    data = search.carry.subarray(0, scan.carried + data.length)
  }
  const lastNewline = got === 0 ? data.length - 1 : data.lastIndexOf(10)
  if (lastNewline >= 0) searchLines(search, scan, data.subarray(0, lastNewline + 1))
  const rest = data.subarray(lastNewline + 1)
  scan.carried = 0
  if (got === 0) return true
  if (rest.length > MAX_LINE_BYTES) {
    // The line is matched on its prefix now; its remainder is dropped as it arrives.
    const head = rest.subarray(0, MAX_LINE_BYTES)
    const prefilter = search.pattern.prefilter
    search.work += prefilter === undefined ? 0 : head.length * prefilterCost
    if (prefilter === undefined || prefilter.over(head)(0) !== -1) testLine(search, scan, head)
    scan.dropping = true
  } else if (rest.length > 0) {
    // Kept: the next read overwrites the chunk `rest` may view.
    if (rest.byteOffset !== search.carry.byteOffset || rest.buffer !== search.carry.buffer) rest.copy(search.carry, 0)
    scan.carried = rest.length
  }
  return false
}

/** Reads and searches the next chunk of `scan`; true once the file is done. */
const step = (search: Search, scan: Scan): boolean => {
  const chunk = search.chunk
  const got = NodeFs.readSync(scan.fd, chunk, 0, chunk.length, scan.position)
  search.work += got
  if (scan.position === 0) {
    if (chunk.subarray(0, Math.min(got, binaryProbeBytes)).includes(0)) return true
  }
  const prefilter = search.pattern.prefilter
  if (scan.probing && prefilter !== undefined) {
    // First a pass over the bytes for a candidate anywhere in the file, nothing decoded.
    search.work += got * prefilterCost
    if (prefilter.over(chunk.subarray(0, got))(0) === -1) {
      if (got < chunk.length) return true
      scan.position += got - prefilter.overlap
      return false
    }
    scan.probing = false
    // A file read whole in this chunk is searched from it; a longer one is read again from the top.
    if (scan.position !== 0 || got === chunk.length) {
      scan.position = 0
      return false
    }
  }
  return searchChunk(search, scan, got)
}

/** Opens `absolute` for a search, or says why it will not be searched (`undefined`: silently). */
const open = (absolute: string, admits: ((fd: number) => boolean) | undefined): number | "unreadable" | undefined => {
  let fd: number
  try {
    // Non-blocking, so a FIFO that replaced the file since the walk does not wait for a writer.
    fd = NodeFs.openSync(absolute, NodeFs.constants.O_RDONLY | NodeFs.constants.O_NONBLOCK)
  } catch {
    return "unreadable"
  }
  try {
    // What was opened, not what was walked: a directory swapped for a link since is not followed.
    if ((admits === undefined || admits(fd)) && NodeFs.fstatSync(fd).isFile()) return fd
  } catch {
    // Treated as not a regular file.
  }
  NodeFs.closeSync(fd)
  return undefined
}

/** @since 0.1.0 @category models */
export interface Request {
  /** Absolute path of the directory (or file) to search. */
  readonly root: string
  readonly rootIsFile: boolean
  /** How the caller names `root` in errors. */
  readonly display: string
  readonly glob: string
  readonly pattern: Pattern
  readonly limit: number
  /** The path reported for a file, from its absolute path. */
  readonly report: (absolute: string) => string
  /** What the walk may see (a confined sandbox's rules); absent: everything. */
  readonly fence?: WalkFiles.Fence | undefined
  /** Whether a file once opened may be searched (its descriptor); one it refuses is skipped silently. */
  readonly admits?: ((fd: number) => boolean) | undefined
}

/** The files under the root directory that the glob admits, absolute and in path order. */
const filesUnder = (request: Request): Effect.Effect<Array<string>, PermissionDenied | Failed | InvalidPattern> => {
  const glob = GlobPattern.make(request.glob)
  if (Result.isFailure(glob)) return Effect.fail(new InvalidPattern({ pattern: request.glob, description: glob.failure }))
  const prefix = request.root === "/" ? "" : request.root
  return Effect.map(
    WalkFiles.walk(request.root, request.display, glob.success, glob.success.root, "", request.fence),
    (files) => files.map((relative) => `${prefix}/${relative}`)
  )
}

/**
 * Searches per `request`, in path order, stopping at `limit` matching lines.
 *
 * @since 0.1.0
 * @category combinators
 */
export const search = (request: Request): Effect.Effect<GrepResult, PermissionDenied | Failed | InvalidPattern> =>
  Effect.gen(function*() {
    const files = request.rootIsFile ? [request.root] : yield* filesUnder(request)
    const search: Search = {
      pattern: request.pattern,
      limit: request.limit,
      out: [],
      chunk: Buffer.allocUnsafe(chunkBytes),
      carry: Buffer.allocUnsafe(MAX_LINE_BYTES + chunkBytes),
      work: 0
    }
    const skipped: Array<SkippedFile> = []
    let next = 0
    let scan: Scan | undefined
    const close = () => {
      if (scan !== undefined) NodeFs.closeSync(scan.fd)
      scan = undefined
    }
    const nextScan = (): void => {
      const absolute = files[next++]!
      const fd = open(absolute, request.admits)
      if (fd === "unreadable") return void skipped.push({ path: request.report(absolute), why: "unreadable" })
      if (fd === undefined) return
      scan = {
        fd,
        path: request.report(absolute),
        position: 0,
        lineNumber: 1,
        carried: 0,
        dropping: false,
        probing: request.pattern.prefilter !== undefined
      }
    }
    const done = () => search.out.length >= request.limit || (scan === undefined && next >= files.length)
    yield* Effect.ensuring(
      WalkFiles.inSlices(() => {
        search.work = 0
        for (let n = 0; n < sliceFiles && search.work < sliceWork && !done();) {
          if (scan === undefined) {
            n++
            nextScan()
            continue
          }
          const current = scan
          let finished: boolean
          try {
            finished = step(search, current)
          } catch {
            skipped.push({ path: current.path, why: "unreadable" })
            finished = true
          }
          if (finished) close()
        }
        return done()
      }),
      Effect.sync(close)
    )
    return { matches: search.out.slice(0, request.limit), skipped }
  })
