/**
 * wireToolNames — tool names every provider accepts, mapped back on the way in.
 *
 * Our tool names may hold characters the vendors refuse (`github.create_issue` from an MCP server:
 * Anthropic and OpenAI accept `^[a-zA-Z0-9_-]{1,64}$`). A model resolved through the provider
 * registry sees each such name replaced by a safe one — the other characters become `_`, a name
 * over 64 characters keeps its start and a hash, a clash gets `_2`, `_3`… in the order of the
 * request's tools — in the tool list and in every tool call and result of the history, and its
 * tool calls come back under the original names. Deterministic for a given tool list, so a
 * conversation sends the same names every turn. A request whose names are all safe is passed
 * through untouched (no copy).
 */
import { Stream } from "effect"
import * as History from "../History.ts"
import { assistant, type Message, toolResult } from "../Message.ts"
import type { Part, Request, Service } from "../Model.ts"

const SAFE = /^[a-zA-Z0-9_-]{1,64}$/
const MAX = 64

/** FNV-1a, 32 bits, as 8 hex digits: enough to tell long names apart. */
const hash = (text: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0
  return h.toString(16).padStart(8, "0")
}

const safeOf = (name: string): string => {
  const replaced = name.replace(/[^a-zA-Z0-9_-]/g, "_") || "tool"
  return replaced.length <= MAX ? replaced : `${replaced.slice(0, MAX - 9)}_${hash(name)}`
}

/** The wire name of every tool of the request, or undefined when all are safe already. */
const mapping = (request: Request): ReadonlyMap<string, string> | undefined => {
  if (request.tools.every((tool) => SAFE.test(tool.name))) return undefined
  const taken = new Set(request.tools.filter((tool) => SAFE.test(tool.name)).map((tool) => tool.name))
  const out = new Map<string, string>()
  for (const { name } of request.tools) {
    if (SAFE.test(name)) continue
    const base = safeOf(name)
    let wire = base
    for (let n = 2; taken.has(wire); n++) wire = `${base.slice(0, MAX - String(n).length - 1)}_${n}`
    taken.add(wire)
    out.set(name, wire)
  }
  return out
}

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
