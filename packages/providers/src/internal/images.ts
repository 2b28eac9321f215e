/**
 * images — what the OpenAI wire formats share about images: the data URL an image travels as, and
 * the line that names the call whose result an image belongs to when a format cannot put images
 * in a tool result (Chat's `tool` message, Responses' `function_call_output` text) and sends them
 * in a `user` message after the results instead.
 */
import type { ImagePart } from "@condukt/core/Message"

/** `data:<media type>;base64,<data>`. */
export const dataUrl = (image: ImagePart): string => `data:${image.mediaType};base64,${image.data}`

/** The text before one tool result's images. */
export const caption = (tool: string, callId: string): string => `The images ${tool} returned (call ${callId}):`
