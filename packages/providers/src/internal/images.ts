/**
 * images — what the wire formats share about images: the data URL an image travels as (OpenAI),
 * the line that names the call whose result an image belongs to when a format cannot put images
 * in a tool result (Chat's `tool` message, Responses' `function_call_output` text) and sends them
 * in a `user` message after the results instead (`AfterResults` holds them until then), and the
 * notice a model that cannot be sent images at all (`fromLanguageModel`) reads in their place.
 */
import type { ImagePart } from "@condukt/core/Message"

/** `data:<media type>;base64,<data>`. */
export const dataUrl = (image: ImagePart): string => `data:${image.mediaType};base64,${image.data}`

/** What replaces `count` images a model cannot be sent, after the text they came with. */
export const notCarried = (count: number): string =>
  `(${count === 1 ? "1 image" : `${count} images`} not shown: this model's provider cannot be sent images)`

/** The text before one tool result's images. */
export const caption = (tool: string, callId: string): string => `The images ${tool} returned (call ${callId}):`

/**
 * A turn's tool-result images, held until the turn's last result and then sent in one `user`
 * message, each result's images after the line naming its call (`caption`).
 */
export class AfterResults<Part> {
  #held: Array<Part> = []
  /** Holds one result's images: `captioned` is the caption as the wire's text part. */
  hold(captioned: Part, images: ReadonlyArray<Part>): void {
    this.#held.push(captioned, ...images)
  }
  /** Appends the held images to `out` as one `user` message, if there are any. */
  flush(out: Array<Record<string, unknown>>): void {
    if (this.#held.length === 0) return
    out.push({ role: "user", content: this.#held })
    this.#held = []
  }
}
