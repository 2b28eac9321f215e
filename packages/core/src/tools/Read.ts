/**
 * Read — a file's text as the model sees it: raw, without line numbers, at most `MAX_LINES` lines
 * and `MAX_BYTES` bytes, with a one-line header whenever the model sees less than the whole file
 * (so it knows which lines it has and how many there are). A picture comes back as an image the
 * model sees (`Tool.images`: a line naming it, and its base64 bytes as an image part), up to
 * `MAX_IMAGE_BYTES` (docs/decisions/0050). A picture is a file named like one (`.png`, `.jpg`,
 * `.jpeg`, `.gif`, `.webp`) whose first bytes are one of those formats' signatures; its media type
 * is the one its bytes say (a PNG named `.jpg` goes as `image/png`: a provider refuses an image
 * whose bytes are not its declared type). A file named like a picture whose bytes are not one is
 * read as text, as any other file (a binary one then fails as not UTF-8).
 *
 * The file is streamed once through the sandbox (`internal/lineWindow.ts`): every line is counted
 * (the header's "of N" is exact) and only the window shown is kept and decoded, so a 400 MB file
 * costs a few chunks of memory and only the window is checked for UTF-8. A named pipe, a device
 * or a socket is refused by the sandbox before anything is read.
 *
 * Lines: a final "\n" ends the last line rather than starting another, so a file of "a\nb\n" has
 * 2 lines. A window (`offset`, `limit`) is shown as its lines joined by "\n". An `offset` past the
 * last line is an error naming the line count; `offset` < 1 and `limit` outside 1..`MAX_LINES`
 * are refused by the parameters' schema.
 */
import { Effect, Schema, Stream } from "effect"
import { Base64 } from "effect/encoding"
import * as LineWindow from "../internal/lineWindow.ts"
import * as Message from "../Message.ts"
import { limitOutput, MAX_BYTES, MAX_LINES } from "../internal/outputLimit.ts"
import * as Sandbox from "../Sandbox.ts"
import * as Tool from "../Tool.ts"
import { fromFileOperation, ToolError } from "./ToolError.ts"

/**
 * The largest image Read returns: `Tool.MAX_IMAGE_BYTES` (3.5 MiB, docs/decisions/0050).
 *
 * @since 0.1.0
 * @category models
 */
export const MAX_IMAGE_BYTES = Tool.MAX_IMAGE_BYTES

const IMAGE_EXTENSIONS: ReadonlySet<string> = new Set([".jpg", ".jpeg", ".png", ".gif", ".webp"])

/** Whether the path's name says picture (the extension, in any case). */
const namedLikeImage = (path: string): boolean => {
  const base = path.slice(path.lastIndexOf("/") + 1)
  const dot = base.lastIndexOf(".")
  return dot !== -1 && IMAGE_EXTENSIONS.has(base.slice(dot).toLowerCase())
}

/** The longest signature checked (WebP's: `RIFF`, a size, `WEBP`). */
const SIGNATURE_BYTES = 12

const startsWith = (bytes: Uint8Array, signature: ReadonlyArray<number>, at = 0): boolean =>
  signature.every((byte, i) => bytes[at + i] === byte)

const ascii = (text: string): ReadonlyArray<number> => Array.from(text, (c) => c.charCodeAt(0))

/** The image format the first bytes of a file are the signature of, as a media type. */
const sniff = (head: Uint8Array): string | undefined =>
  startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    ? "image/png"
    : startsWith(head, [0xff, 0xd8, 0xff])
    ? "image/jpeg"
    : startsWith(head, ascii("GIF87a")) || startsWith(head, ascii("GIF89a"))
    ? "image/gif"
    : startsWith(head, ascii("RIFF")) && startsWith(head, ascii("WEBP"), 8)
    ? "image/webp"
    : undefined

/** The first `SIGNATURE_BYTES` of the file (fewer when it is shorter), read from its first chunks only. */
const headOf = (sandbox: Sandbox.Service, path: string) =>
  Effect.suspend(() => {
    let got = 0
    return Effect.mapError(
      Effect.map(
        Stream.runCollect(Stream.takeUntil(sandbox.readStream(path), (chunk) => (got += chunk.length) >= SIGNATURE_BYTES)),
        (chunks) => {
          const head = new Uint8Array(Math.min(got, SIGNATURE_BYTES))
          let at = 0
          for (const chunk of chunks) {
            if (at >= head.length) break
            head.set(chunk.subarray(0, head.length - at), at)
            at += Math.min(chunk.length, head.length - at)
          }
          return head
        }
      ),
      fromFileOperation("read", path)
    )
  })

const plural = (n: number) => (n === 1 ? `${n} line` : `${n} lines`)

const Parameters = Schema.Struct({
  path: Schema.String.annotate({ description: "Path to the file to read (relative to the working directory, or absolute)" }),
  offset: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({ description: "Line number to start reading from (1-indexed)" })
  ),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_LINES })).annotate({
      description: `Maximum number of lines to read (at most ${MAX_LINES})`
    })
  )
})

/** The window of `path` the model asked for, from one streamed pass over the file. */
const readWindow = Effect.fnUntraced(
  function*(
    sandbox: Sandbox.Service,
    path: string,
    offset: number | undefined,
    limit: number | undefined,
    redact: (text: string) => string
  ) {
    const from = offset ?? 1
    // Without a limit, one line more than can be shown is kept, so the output limit sees the cut.
    const scanner = LineWindow.make(from, limit ?? MAX_LINES + 1)
    yield* Effect.mapError(
      Stream.runForEach(sandbox.readStream(path), (chunk) => Effect.sync(() => scanner.feed(chunk))),
      fromFileOperation("read", path)
    )
    const window = scanner.done()
    const total = window.lines
    if (from > Math.max(total, 1)) {
      return yield* new ToolError({ message: `Cannot read ${path}: offset ${from} is past the end of the file (${plural(total)})` })
    }
    const end = limit === undefined ? total : Math.min(total, from - 1 + limit)
    const whole = from === 1 && end === total
    const decoded = yield* Effect.mapError(
      Sandbox.decodeUtf8("read", path, window.kept, window.bytes),
      fromFileOperation("read", path)
    )
    // A window is its lines joined by "\n": the newline ending its last line is not part of it.
    const text = !whole && !window.cut && decoded.endsWith("\n") ? decoded.slice(0, -1) : decoded
    const limited = limitOutput(text, redact)
    if (limited.truncated) {
      const to = from + limited.lines - 1
      return `(showing lines ${from}-${to} of ${total}, output truncated)\n\n${limited.text}`
    }
    return whole ? limited.text : `(lines ${from}-${end} of ${total})\n\n${limited.text}`
  }
)

const readImage = (sandbox: Sandbox.Service, path: string, media: string) =>
  Effect.mapError(
    Effect.map(sandbox.readFile(path, { maxBytes: MAX_IMAGE_BYTES }), (bytes) =>
      Tool.images(`Image ${path} (${media}, ${bytes.length} bytes)`, [Message.imagePart(media, Base64.encode(bytes))])),
    (error) =>
      error.reason._tag === "TooLarge"
        ? new ToolError({
          message: `Cannot read ${path}: the image is larger than ${MAX_IMAGE_BYTES / 1024} KiB (${MAX_IMAGE_BYTES} bytes), the most Read returns.`
        })
        : fromFileOperation("read", path)(error)
  )

/**
 * Reads a text file (or an image) through the sandbox.
 *
 * @since 0.1.0
 * @category models
 */
export const Read = Tool.make("Read", {
  // It only reads: a call cut off by a crash runs again when the session resumes.
  retrySafe: true,
  description: [
    "Shows a file's text exactly as stored (no line numbers added).",
    `One call returns at most ${MAX_LINES} lines and ${MAX_BYTES / 1024}KB; when you get less than the whole file,`,
    "a first line says which lines you have and how many there are, and offset and limit fetch the rest.",
    `Pictures (jpg, jpeg, png, gif, webp) up to ${MAX_IMAGE_BYTES / 1024}KB come back as images you see.`,
    "Only regular files can be read (not pipes or devices)."
  ].join(" "),
  parameters: Parameters,
  call: Effect.fn("Read.call")(function*({ path, offset, limit }: typeof Parameters.Type, { redact, sandbox }: Tool.Context) {
    // The name only says which files to look at: the bytes say whether it is a picture, and which.
    const media = namedLikeImage(path) ? sniff(yield* headOf(sandbox, path)) : undefined
    return yield* (media === undefined ? readWindow(sandbox, path, offset, limit, redact) : readImage(sandbox, path, media))
  })
})
