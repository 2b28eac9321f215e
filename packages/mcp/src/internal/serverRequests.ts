/**
 * serverRequests — what a connection answers when its server asks the client something (ADR 0063).
 *
 * `roots/list`: the session's roots (its sandbox's working directory) when the session gives them.
 * `sampling/createMessage`: the session's own model, when the declaration says `sampling: "allow"`
 * (default deny: the capability is not declared and the SDK answers "method not found"); the
 * request is bounded (messages, their text, the tokens asked) before the model sees it, and the
 * answer is redacted (the server's credentials, then the session's) before the server does.
 * `elicitation/create`: the declaration's handler, or `accept-defaults`. Each is declared in the
 * client's capabilities only when it is answered, so a server offers only what will work.
 */
import {
  type Client,
  type ClientCapabilities,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitResult,
  ProtocolErrorCode,
  type SamplingMessage
} from "@modelcontextprotocol/client"
import { Effect, Stream } from "effect"
import { History, Message, Model, type ToolSource } from "@condukt/core"
import type { Credentials } from "./credentials.ts"
import type { Declaration, ElicitationAnswer } from "./declaration.ts"

/** What the session lends a connection for its server's requests. */
export interface Requests {
  readonly model?: Model.Service | undefined
  readonly roots?: Effect.Effect<ReadonlyArray<ToolSource.Root>> | undefined
}

/** The most messages one sampling request may hold. */
export const MAX_SAMPLING_MESSAGES = 50

/** The most text one sampling request may hold, its system prompt included (code units). */
export const MAX_SAMPLING_CHARS = 100_000

/** The most tokens a sampled answer may take unless the declaration says otherwise. */
export const MAX_SAMPLING_TOKENS = 4096

const allowsSampling = (declaration: Declaration, requests: Requests): requests is Requests & { readonly model: Model.Service } =>
  declaration.sampling === "allow" && requests.model !== undefined

/** The capabilities the client declares in `initialize`: only what it answers. */
export const capabilities = (declaration: Declaration, requests: Requests): ClientCapabilities => ({
  ...(requests.roots === undefined ? {} : { roots: {} }),
  ...(allowsSampling(declaration, requests) ? { sampling: {} } : {}),
  ...(declaration.elicitation === undefined
    ? {}
    : { elicitation: { form: declaration.elicitation === "accept-defaults" ? { applyDefaults: true } : {} } })
})

/**
 * A JSON-RPC error as the server reads it: the SDK sends a thrown error's `code` and `message`
 * (its own `McpError` would send its message prefixed with `MCP error <code>: `, which the
 * server's SDK prefixes again).
 */
class WireError extends Error {
  readonly code: number
  constructor(code: number, message: string) {
    super(message)
    this.code = code
  }
}

const refuse = (message: string) => new WireError(ProtocolErrorCode.InvalidParams, message)

/** A sampling message's text: only text content can be sampled. */
const textOf = (message: SamplingMessage): string => {
  const blocks = Array.isArray(message.content) ? message.content : [message.content]
  return blocks.map((block) => {
    if (block.type !== "text") throw refuse(`only text can be sampled: a message holds ${block.type} content`)
    return block.text
  }).join("\n")
}

const STOP_REASONS: Readonly<Record<Model.FinishReason, string>> = {
  stop: "endTurn",
  length: "maxTokens",
  "tool-calls": "toolUse",
  "content-filter": "contentFilter",
  other: "other"
}

/** The model's request a server's `sampling/createMessage` makes, within the bounds; or why not. */
const samplingRequest = (declaration: Declaration, params: CreateMessageRequest["params"]): Model.Request => {
  if (params.messages.length > MAX_SAMPLING_MESSAGES) {
    throw refuse(`a sampling request holds at most ${MAX_SAMPLING_MESSAGES} messages (this one ${params.messages.length})`)
  }
  const texts = params.messages.map(textOf)
  const size = texts.reduce((sum, text) => sum + text.length, params.systemPrompt?.length ?? 0)
  if (size > MAX_SAMPLING_CHARS) throw refuse(`a sampling request holds at most ${MAX_SAMPLING_CHARS} characters of text (this one ${size})`)
  const messages = params.messages.map((message, i) =>
    message.role === "user" ? Message.user(texts[i]!) : Message.assistant([Message.textPart(texts[i]!)])
  )
  return {
    system: params.systemPrompt,
    messages: History.fromIterable(messages),
    tools: [],
    options: {
      maxTokens: Math.min(params.maxTokens, declaration.maxSamplingTokens ?? MAX_SAMPLING_TOKENS),
      ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
      ...(params.stopSequences === undefined ? {} : { stopSequences: params.stopSequences })
    }
  }
}

/** The sampled answer, redacted; a model's failure is the server's error, redacted too. */
const sample = (model: Model.Service, request: Model.Request, credentials: Credentials): Effect.Effect<CreateMessageResult, WireError> =>
  Stream.runCollect(model.stream(request)).pipe(
    Effect.map((collected) => {
      const parts = Array.from(collected)
      const finish = parts.findLast((part) => part._tag === "Finish")
      return {
        role: "assistant" as const,
        content: { type: "text" as const, text: credentials.redact(Message.text(Model.toMessage(parts))) },
        model: model.name,
        stopReason: STOP_REASONS[finish?._tag === "Finish" ? finish.reason : "other"]
      }
    }),
    Effect.mapError((error) => new WireError(ProtocolErrorCode.InternalError, credentials.redact(`the model failed: ${error.message}`)))
  )

/** Registers the handlers of what `capabilities` declared. */
export const install = (client: Client, declaration: Declaration, requests: Requests, credentials: Credentials): void => {
  const roots = requests.roots
  if (roots !== undefined) {
    client.setRequestHandler("roots/list", (_, extra) => Effect.runPromise(Effect.map(roots, (list) => ({ roots: [...list] })), { signal: extra.mcpReq.signal }))
  }
  if (allowsSampling(declaration, requests)) {
    const model = requests.model
    client.setRequestHandler(
      "sampling/createMessage",
      (request, extra) => Effect.runPromise(sample(model, samplingRequest(declaration, request.params), credentials), { signal: extra.mcpReq.signal })
    )
  }
  const elicitation = declaration.elicitation
  if (elicitation === "accept-defaults") {
    client.setRequestHandler("elicitation/create", () => Promise.resolve({ action: "accept" as const, content: {} }))
  } else if (elicitation !== undefined) {
    client.setRequestHandler("elicitation/create", (request, extra) => {
      const params = request.params
      if (params.mode === "url") return Promise.resolve<ElicitResult>({ action: "decline" })
      // The answer's arrays are readonly; the SDK's result type has them mutable (it only reads them).
      const answered = Effect.map(elicitation({ server: declaration.name, message: params.message, requestedSchema: params.requestedSchema }), (answer: ElicitationAnswer) => answer as ElicitResult)
      return Effect.runPromise(answered, { signal: extra.mcpReq.signal })
    })
  }
}
