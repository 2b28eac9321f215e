/** What the model reads of a `tools/call` result: text joined, images sent as images within bounds. */
import { assert, describe, it } from "@effect/vitest"
import { Tool } from "@condukt/core"
import { McpClient } from "../src/index.ts"

const png = (bytes: number) => Buffer.alloc(bytes, 7).toString("base64")

describe("McpClient.render", () => {
  it("joins text parts; a result with no image stays text", () => {
    assert.strictEqual(McpClient.render({ content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }), "a\nb")
  })

  it("sends a picture as an image, named on its line as Read names one", () => {
    const rendered = McpClient.render({ content: [{ type: "text", text: "Here:" }, { type: "image", mimeType: "image/png", data: png(10) }] })
    assert.instanceOf(rendered, Tool.Images)
    const images = rendered as Tool.Images
    assert.strictEqual(images.text, "Here:\nImage (image/png, 10 bytes)")
    assert.deepStrictEqual(images.images, [{ _tag: "Image", mediaType: "image/png", data: png(10) }])
  })

  it("leaves out, by name and reason, an image of another type, one too large, and those past the count", () => {
    const content = [
      { type: "image" as const, mimeType: "image/svg+xml", data: png(3) },
      { type: "image" as const, mimeType: "image/jpeg", data: png(Tool.MAX_IMAGE_BYTES + 1) },
      ...Array.from({ length: McpClient.MAX_IMAGES + 1 }, () => ({ type: "image" as const, mimeType: "image/gif", data: png(1) }))
    ]
    const rendered = McpClient.render({ content }) as Tool.Images
    assert.strictEqual(rendered.images.length, McpClient.MAX_IMAGES)
    assert.deepStrictEqual(rendered.text.split("\n").filter((line) => line.includes("left out")), [
      "Image (image/svg+xml, 3 bytes) left out: not a type models are sent",
      `Image (image/jpeg, ${Tool.MAX_IMAGE_BYTES + 1} bytes) left out: larger than ${Tool.MAX_IMAGE_BYTES} bytes`,
      `Image (image/gif, 1 bytes) left out: more than ${McpClient.MAX_IMAGES} images`
    ])
  })
})
