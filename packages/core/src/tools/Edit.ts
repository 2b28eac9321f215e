/**
 * Edit — replace one exact, case-sensitive occurrence of `old_text` in a file, through the
 * sandbox's `edit` (which writes only when there is exactly one match).
 *
 * Every other outcome is an error the model can act on: identical texts (checked before the file is
 * touched), no match (with a hint saying why it probably failed), several matches (file untouched).
 * An empty `old_text` is refused by the schema: it would occur everywhere. On success the model gets
 * a small diff of the replaced lines so it can check what changed without reading the file again.
 * The sandbox reads the file whole, so a named pipe or a device is refused and so is a file over
 * `Sandbox.DEFAULT_MAX_FILE_BYTES` (16 MiB), each with a sentence saying so.
 */
import { Effect, Schema } from "effect"
import * as Sandbox from "../Sandbox.ts"
import * as Tool from "../Tool.ts"
import { fromFileOperation, ToolError } from "./ToolError.ts"

const Parameters = Schema.Struct({
  path: Schema.String.annotate({ description: "Path to the file to edit (relative to the working directory, or absolute)" }),
  old_text: Schema.String.check(Schema.isMinLength(1)).annotate({
    description: "Exact text to find and replace (must match exactly once, including whitespace)"
  }),
  new_text: Schema.String.annotate({ description: "New text to replace the old text with" })
})

/** Why `old_text` did not match, judged from its first line (Condukt's three cases, our words). */
const notFound = (path: string, content: string, oldText: string): string => {
  const firstLine = (oldText.split("\n")[0] ?? "").trim()
  if ([...firstLine].length < 5) {
    return `old_text not found in ${path}. Copy it from the file exactly, whitespace included.`
  }
  if (content.includes(firstLine)) {
    return [
      `old_text not found in ${path}.`,
      "Its first line is in the file but what follows differs, most often in whitespace:",
      "tabs against spaces, trailing spaces, or line endings. Use the Read tool and copy the passage exactly."
    ].join("\n")
  }
  return [
    `old_text not found in ${path}.`,
    "It does not appear in the file at all. Use the Read tool to see what the file holds now."
  ].join("\n")
}

const diff = (oldText: string, newText: string): string => {
  const lines = [...oldText.split("\n").map((line) => `- ${line}`), ...newText.split("\n").map((line) => `+ ${line}`)]
  return ["```diff", ...lines, "```"].join("\n")
}

/**
 * Replaces one exact occurrence of a text in a file.
 *
 * @since 0.1.0
 * @category models
 */
export const Edit = Tool.make("Edit", {
  description: [
    "Changes a file by swapping one passage for another: old_text must occur in the file exactly once,",
    "character for character, whitespace included (add neighbouring lines when it is not unique).",
    "Answers with a diff of what changed.",
    `Only regular files up to ${Sandbox.DEFAULT_MAX_FILE_BYTES / 1024 / 1024}MB can be edited.`
  ].join(" "),
  parameters: Parameters,
  concurrent: false,
  call: Effect.fn("Edit.call")(function*({ path, old_text, new_text }: typeof Parameters.Type, { sandbox }: Tool.Context) {
    if (old_text === new_text) {
      return yield* new ToolError({ message: `No changes made to ${path}. The replacement produced identical content.` })
    }
    const result = yield* Effect.mapError(sandbox.edit(path, old_text, new_text), fromFileOperation("edit", path))
    if (result.occurrences === 0) return yield* new ToolError({ message: notFound(path, result.content, old_text) })
    if (result.occurrences > 1) {
      return yield* new ToolError({
        message: `Found ${result.occurrences} occurrences of old_text in ${path}. Make the match unique by including more surrounding context.`
      })
    }
    return `Successfully edited ${path}\n\n${diff(old_text, new_text)}`
  })
})
