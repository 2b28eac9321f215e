/**
 * wireToolNames — tool names every provider accepts, mapped back on the way in.
 *
 * Our tool names may hold characters the vendors refuse (`github.create_issue` from an MCP server:
 * Anthropic and OpenAI accept `^[a-zA-Z0-9_-]{1,64}$`). A model resolved through the provider
 * registry sees each such name replaced by a safe one (`ToolName.safeNames` over the request's
 * tools, charset `provider`) in the tool list and in every tool call and result of the history, and its
 * tool calls come back under the original names. Deterministic for a given tool list, so a
 * conversation sends the same names every turn. A request whose names are all safe is passed
 * through untouched (no copy).
 */
import { Stream } from "effect"
import * as History from "../History.ts"
import { assistant, type Message, toolResult } from "../Message.ts"
import type { Part, Request, Service } from "../Model.ts"
import * as ToolName from "../ToolName.ts"

/** The wire name of every tool of the request that needs one, or undefined when all are safe already. */
const mapping = (request: Request): ReadonlyMap<string, string> | undefined =>
  request.tools.every((tool) => ToolName.isSafe(tool.name, "provider"))
    ? undefined
    : ToolName.safeNames(request.tools.map((tool) => tool.name), "provider")

const renameMessage = (message: Message, wire: (name: string) => string): Message => {
  if (message._tag === "ToolResultMessage") {
    const name = wire(message.name)
    return name === message.name ? message : toolResult({ ...message, name })
  }
  if (message._tag !== "AssistantMessage" || !message.parts.some((p) => p._tag === "ToolCall" && wire(p.name) !== p.name)) {
    return message
  }
  return assistant(message.parts.map((part) => (part._tag === "ToolCall" ? { ...part, name: wire(part.name) } : part)))
}

/**
 * The model, sending provider-safe tool names and answering with the session's own.
 *
 * @since 0.1.0
 * @category combinators
 */
export const apply = (model: Service): Service => ({
  ...model,
  stream: (request) => {
    const names = mapping(request)
    if (names === undefined) return model.stream(request)
    const wire = (name: string) => names.get(name) ?? name
    const back = new Map([...names].map(([name, safe]) => [safe, name]))
    const renamed: Request = {
      ...request,
      tools: request.tools.map((tool) => (names.has(tool.name) ? { ...tool, name: wire(tool.name) } : tool)),
      messages: History.fromIterable(Array.from(request.messages, (message) => renameMessage(message, wire)))
    }
    return Stream.map(model.stream(renamed), (part): Part =>
      part._tag === "ToolCall" && back.has(part.name) ? { ...part, name: back.get(part.name)! } : part)
  }
})
