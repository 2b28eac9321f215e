/**
 * ToolResult — what a tool's `call` gives back: plain text or any JSON value, text with structured
 * data for events (`structured`), text with images the model sees (`images`), a result with a
 * patch to the session's assigns (`assign`), or a typed failure the model reads as `Error: …`.
 *
 * These are values only: the executor renders them for the model, the session merges the assigns.
 * The image bounds are here because every provider must be able to carry what a tool returns.
 * `Tool` re-exports all of this.
 */
import type { Schema } from "effect"
import type { ImagePart } from "./Message.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** The model sees `text`; `data` goes to events and metadata only. */
export class Structured {
  readonly _tag = "Structured"
  readonly text: string
  readonly data: unknown
  constructor(text: string, data: unknown) {
    this.text = text
    this.data = data
  }
}

/**
 * Text plus images the model sees as images (a picture Read returned): each provider sends them
 * as its image blocks; one that cannot carry images sends the text and says they were left out.
 */
export class Images {
  readonly _tag = "Images"
  readonly text: string
  readonly images: ReadonlyArray<ImagePart>
  constructor(text: string, images: ReadonlyArray<ImagePart>) {
    this.text = text
    this.images = images
  }
}

/** A result (`value`) plus a patch merged into the session's assigns after the message. */
export class Assign {
  readonly _tag = "Assign"
  readonly value: Output
  readonly patch: Readonly<Record<string, unknown>>
  constructor(value: Output, patch: Readonly<Record<string, unknown>>) {
    this.value = value
    this.patch = patch
  }
}

/** Everything `call` may succeed with: a string, any JSON value, `structured`, `images` or `assign`. */
export type Output = string | Schema.Json | Structured | Images | Assign | void

/** A typed failure: a string or any error with a message. The model reads `Error: <message>`. */
export type Failure = string | { readonly message: string }
// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * A result whose `text` the model reads and whose `data` goes to events and metadata.
 *
 * @since 0.1.0
 * @category constructors
 */
export const structured = (text: string, data: unknown): Structured => new Structured(text, data)

/**
 * The largest image a tool result carries as an image: 3.5 MiB, whose base64 (4,893,356
 * characters) stays within the 5 MB per image of Anthropic, the smallest vendor limit
 * (docs/decisions/0050). Read returns no larger picture; an MCP server's larger one is left out.
 *
 * @since 0.1.0
 * @category models
 */
export const MAX_IMAGE_BYTES = 3.5 * 1024 * 1024

/**
 * The image types every provider accepts as an image.
 *
 * @since 0.1.0
 * @category models
 */
export const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"])

/**
 * A result the model reads as `text` and sees as `images` (base64 image parts).
 *
 * @since 0.1.0
 * @category constructors
 */
export const images = (text: string, images: ReadonlyArray<ImagePart>): Images => new Images(text, images)

/**
 * A result that also merges `patch` into the session's assigns once the message's calls finish.
 *
 * @since 0.1.0
 * @category constructors
 */
export const assign = (value: Output, patch: Readonly<Record<string, unknown>>): Assign => new Assign(value, patch)
