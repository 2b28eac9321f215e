/**
 * ToolError — the one failure of the built-in tools. Its `message` is the exact sentence the model
 * reads (the Executor renders it as `Error: <message>`), so each tool words it for the model: what
 * went wrong with which argument, and what to do next.
 *
 * Sandbox failures are translated by their reason's `_tag`, never by parsing their text; a path
 * outside the allowed directories keeps the sandbox's own sentence, which already names the path.
 * The file tools also pass a `Failed` reason's description on unchanged: backends word it as a
 * whole sentence naming the step and the path (`Sandbox.decodeUtf8`, LocalSandbox: "Cannot read
 * <path>: …", "Cannot write to <path>: …"), which is Condukt's wording already.
 */
import { Schema } from "effect"
import type * as Sandbox from "../Sandbox.ts"

/**
 * A built-in tool's failure, worded for the model.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", {
  message: Schema.String
}) {}

/**
 * Turns a SandboxError into a ToolError with the tool's wording for its reason.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromSandbox = (render: (reason: Sandbox.Reason) => string) => (error: Sandbox.SandboxError): ToolError =>
  new ToolError({ message: error.reason._tag === "OutsideAllowedPaths" ? error.reason.message : render(error.reason) })

/**
 * The file tools' wording: a missing file, a directory where a file was expected, a backend's own
 * sentence for anything it could not classify, and `Cannot <action> <path>: …` for the rest.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromFileOperation = (action: string, path: string) =>
  fromSandbox((reason) => {
    switch (reason._tag) {
      case "NotFound":
        return `File not found: ${path}`
      case "IsDirectory":
        return `${path} is a directory, not a file`
      case "NotRegularFile":
        return `Cannot ${action} ${path}: it is ${reason.description}`
      case "TooLarge":
        return `Cannot ${action} ${path}: the file is larger than ${reason.maxBytes} bytes`
      case "Failed":
        // Backends word it whole, naming the step that failed ("Cannot read a.ts: …").
        return reason.description
      default:
        return `Cannot ${action} ${path}: ${reason.message}`
    }
  })
