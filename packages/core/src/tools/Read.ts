/**
 * Read — a file's text as the model sees it: raw, without line numbers, at most `MAX_LINES` lines
 * and `MAX_BYTES` bytes, with a one-line header whenever the model sees less than the whole file
 * (so it knows which lines it has and how many there are). Images come back as base64 JSON.
 *
 * Lines: a final "\n" ends the last line rather than starting another, so a file of "a\nb\n" has
 * 2 lines. A window (`offset`, `limit`) is shown as its lines joined by "\n". An `offset` past the
 * last line is an error naming the line count; `offset` < 1 and `limit` outside 1..`MAX_LINES`
 * are refused by the parameters' schema. Everything goes through the session's sandbox.
 */
import { Effect, Schema } from "effect"
import { Base64 } from "effect/encoding"
import { limitOutput, MAX_BYTES, MAX_LINES, splitLines } from "../internal/outputLimit.ts"
import * as Sandbox from "../Sandbox.ts"
import * as Tool from "../Tool.ts"
import { fromFileOperation, ToolError } from "./ToolError.ts"

const MEDIA_TYPES: Readonly<Record<string, string>> = {
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".png": "image/png",
  ".gif": "image/gif",
  ".webp": "image/webp"
}

const mediaType = (path: string): string | undefined => {
  const base = path.slice(path.lastIndexOf("/") + 1)
  const dot = base.lastIndexOf(".")
  return dot === -1 ? undefined : MEDIA_TYPES[base.slice(dot).toLowerCase()]
}

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

const formatText = (path: string, content: string, offset: number | undefined, limit: number | undefined) => {
  const lines = splitLines(content)
  const total = lines.length
  const from = offset ?? 1
  if (from > Math.max(total, 1)) {
    return Effect.fail(
      new ToolError({ message: `Cannot read ${path}: offset ${from} is past the end of the file (${plural(total)})` })
    )
  }
  const end = limit === undefined ? total : Math.min(total, from - 1 + limit)
  const whole = from === 1 && end === total
  const limited = limitOutput(whole ? content : lines.slice(from - 1, end).join("\n"))
  if (limited.truncated) {
    const to = from + limited.lines - 1
    return Effect.succeed(`(showing lines ${from}-${to} of ${total}, output truncated)\n\n${limited.text}`)
  }
  return Effect.succeed(whole ? content : `(lines ${from}-${end} of ${total})\n\n${limited.text}`)
}

/**
 * Reads a text file (or an image) through the sandbox.
 *
 * @since 0.1.0
 * @category models
 */
export const Read = Tool.make("Read", {
  description: [
    "Shows a file's text exactly as stored (no line numbers added).",
    `One call returns at most ${MAX_LINES} lines and ${MAX_BYTES / 1024}KB; when you get less than the whole file,`,
    "a first line says which lines you have and how many there are, and offset and limit fetch the rest.",
    "Pictures (jpg, jpeg, png, gif, webp) come back as JSON holding their base64 bytes."
  ].join(" "),
  parameters: Parameters,
  call: Effect.fn("Read.call")(function*({ path, offset, limit }: typeof Parameters.Type, { sandbox }: Tool.Context) {
    const bytes = yield* Effect.mapError(sandbox.readFile(path), fromFileOperation("read", path))
    const media = mediaType(path)
    if (media !== undefined) return { type: "image", media_type: media, data: Base64.encode(bytes) }
    const content = yield* Effect.mapError(Sandbox.decodeUtf8("read", path, bytes), fromFileOperation("read", path))
    return yield* formatText(path, content, offset, limit)
  })
})
