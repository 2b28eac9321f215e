/**
 * UiMessageStream — a Condukt run as the AI SDK's UI message stream (`ai` 7.x, header
 * `x-vercel-ai-ui-message-stream: v1`), the protocol `useChat` and `DefaultChatTransport` read,
 * and what such a client POSTs.
 *
 * The encoder is a pure state machine: one session event in, the chunks it amounts to out; it
 * keeps the open text / reasoning part and the open step. One run is one assistant message; one
 * model turn is one AI SDK step (`start-step` … the turn's tool results … `finish-step`). A call
 * that asks for approval shows as `tool-approval-request` (its approval id is the call's id); its
 * answer as `tool-approval-response` followed by the output, or `tool-output-denied` for a
 * person's denial (core marks one only by the text the model reads: `Denied by the user[: …]`).
 *
 * A run that waits on people ends its message with `pause()` (`finish`, reason `tool-calls`): the
 * client answers and POSTs again, and an encoder `continuing` the same message streams the rest.
 * A tool's output is the text the model read (`content`): the history keeps nothing else, so the
 * message stays what `fromHistory` rebuilds from it.
 *
 * Refused on purpose: a sub-agent's events (`agentPath` set) add nothing to the message — the
 * sub-agent's work reaches it as its parent call's output, as it reaches the history; events
 * between runs (an empty run id); an approval request for a call this stream never announced (an
 * MCP server's sampling request: no tool part shows it); a tool result for one (a restored
 * batch's call), which the client could not place, unless the stream continues a message the
 * client holds (`continuing`).
 *
 * No I/O here: the server frames the chunks (`frame`, `DONE`) and writes them.
 */
import * as JsonLimits from "@condukt/core/JsonLimits"
import type * as Message from "@condukt/core/Message"
import type { SessionEvent } from "@condukt/core/SessionEvent"
import { Result, Schema } from "effect"
import * as UiParts from "./internal/uiParts.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * A chunk of the stream: the members of `ai`'s `UIMessageChunk` this encoder emits.
 *
 * @since 0.1.0
 * @category models
 */
export type Chunk =
  | { readonly type: "start"; readonly messageId: string }
  | { readonly type: "finish"; readonly finishReason: "stop" | "error" | "tool-calls" }
  | { readonly type: "abort" }
  | { readonly type: "error"; readonly errorText: string }
  | { readonly type: "start-step" }
  | { readonly type: "finish-step" }
  | { readonly type: "reset-step" }
  | { readonly type: "text-start" | "text-end" | "reasoning-start" | "reasoning-end"; readonly id: string }
  | { readonly type: "text-delta" | "reasoning-delta"; readonly id: string; readonly delta: string }
  | { readonly type: "tool-input-start"; readonly toolCallId: string; readonly toolName: string }
  | { readonly type: "tool-input-available"; readonly toolCallId: string; readonly toolName: string; readonly input: unknown }
  | { readonly type: "tool-approval-request"; readonly approvalId: string; readonly toolCallId: string }
  | { readonly type: "tool-approval-response"; readonly approvalId: string; readonly approved: boolean; readonly reason?: string }
  | { readonly type: "tool-output-available"; readonly toolCallId: string; readonly output: unknown }
  | { readonly type: "tool-output-error"; readonly toolCallId: string; readonly errorText: string }
  | { readonly type: "tool-output-denied"; readonly toolCallId: string }

/**
 * A person's answer to a call that asked, as a client's message carries it.
 *
 * @since 0.1.0
 * @category models
 */
export type Answer = UiParts.Answer

/**
 * A part of an assistant message as `readUIMessageStream` builds it from this stream.
 *
 * @since 0.1.0
 * @category models
 */
export type UiPart = UiParts.UiPart

/**
 * The response headers of a UI message stream (`ai`'s `UI_MESSAGE_STREAM_HEADERS`).
 *
 * @since 0.1.0
 * @category constants
 */
export const HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-vercel-ai-ui-message-stream": "v1",
  "x-accel-buffering": "no"
}

/** The stream's last frame. @since 0.1.0 @category constants */
export const DONE = "data: [DONE]\n\n"

/** One chunk as a Server-Sent Event. @since 0.1.0 @category constructors */
export const frame = (chunk: Chunk): string => `data: ${JSON.stringify(chunk)}\n\n`

// ---------------------------------------------------------------------------------------------
// The encoder
// ---------------------------------------------------------------------------------------------

/**
 * Session events in, chunks out, for one assistant message.
 *
 * @since 0.1.0
 * @category models
 */
export class Encoder {
  readonly #messageId: string
  readonly #continuing: boolean
  readonly #answers: ReadonlyArray<Answer>
  #started = false
  #step = false
  /** Whether the open step has streamed a part (a retry then resets it). */
  #stepHasParts = false
  #turn = 0
  #counts = { text: 0, reasoning: 0 }
  #open: { readonly kind: "text" | "reasoning"; readonly id: string } | undefined
  /** The calls announced in this stream (id → whether it asked for approval). */
  readonly #calls = new Map<string, boolean>()

  constructor(options: { readonly messageId: string; readonly continuing?: boolean; readonly answers?: ReadonlyArray<Answer> }) {
    this.#messageId = options.messageId
    this.#continuing = options.continuing === true
    this.#answers = options.answers ?? []
  }

  /** The chunks `event` amounts to. */
  push(event: SessionEvent): ReadonlyArray<Chunk> {
    // Between runs, a sub-agent's, or a note that the run still waits: no part of a message, and
    // no reason to start one (a resume that opens on it).
    if (event.runId === "" || event.agentPath !== undefined || event._tag === "StillWaiting") return []
    const out: Array<Chunk> = []
    // A continuation has no AgentStart (the parked run goes on): the message restarts on its first event.
    if (!this.#started && event._tag !== "AgentStart") this.#start(out)
    switch (event._tag) {
      case "AgentStart":
        if (!this.#started) this.#start(out)
        break
      case "TurnStart":
        this.#closeStep(out)
        this.#turn = event.turn
        this.#counts = { text: 0, reasoning: 0 }
        this.#step = true
        out.push({ type: "start-step" })
        break
      case "ModelRetry":
        // The failed attempt's deltas are not the reply: `reset-step` takes them off the message.
        if (this.#stepHasParts) {
          this.#open = undefined
          this.#counts = { text: 0, reasoning: 0 }
          this.#stepHasParts = false
          out.push({ type: "reset-step" })
        }
        break
      case "TextDelta":
      case "ThinkingDelta":
        if (event.text !== "") this.#delta(out, event._tag === "TextDelta" ? "text" : "reasoning", event.text)
        break
      case "TurnEnd":
        this.#closePart(out)
        break
      case "ToolCall":
        this.#closePart(out)
        this.#calls.set(event.callId, false)
        this.#stepHasParts = true
        out.push(
          { type: "tool-input-start", toolCallId: event.callId, toolName: event.name },
          { type: "tool-input-available", toolCallId: event.callId, toolName: event.name, input: event.input }
        )
        break
      case "ApprovalRequested":
        if (this.#calls.has(event.callId)) {
          this.#calls.set(event.callId, true)
          out.push({ type: "tool-approval-request", approvalId: event.callId, toolCallId: event.callId })
        }
        break
      case "ToolResult":
        this.#result(out, event)
        break
      case "Error":
        out.push({ type: "error", errorText: event.message })
        break
      case "AgentEnd":
        this.#closeStep(out)
        out.push(event.outcome === "aborted" ? { type: "abort" } : { type: "finish", finishReason: event.outcome === "completed" ? "stop" : "error" })
        break
    }
    return out
  }

  /**
   * Ends the message while the run waits for people's answers (every call of its batch finished
   * or asking): closes the step and finishes with `tool-calls`, so the client can answer and POST
   * again; the stream that continues the run is another encoder's, `continuing`.
   */
  pause(): ReadonlyArray<Chunk> {
    const out: Array<Chunk> = []
    if (!this.#started) this.#start(out)
    this.#closeStep(out)
    out.push({ type: "finish", finishReason: "tool-calls" })
    return out
  }

  #start(out: Array<Chunk>): void {
    this.#started = true
    out.push({ type: "start", messageId: this.#messageId })
    // The answers the client gave, which its message holds already: said again, they are the stream's too.
    if (this.#continuing) {
      for (const answer of this.#answers) {
        out.push({ type: "tool-approval-response", approvalId: answer.callId, approved: answer.approved, ...(answer.reason === undefined ? {} : { reason: answer.reason }) })
      }
    }
  }

  #delta(out: Array<Chunk>, kind: "text" | "reasoning", delta: string): void {
    if (this.#open?.kind !== kind) {
      this.#closePart(out)
      const id = UiParts.partId(kind, this.#turn, ++this.#counts[kind])
      this.#open = { kind, id }
      this.#stepHasParts = true
      out.push({ type: kind === "text" ? "text-start" : "reasoning-start", id })
    }
    out.push({ type: kind === "text" ? "text-delta" : "reasoning-delta", id: this.#open.id, delta })
  }

  #closePart(out: Array<Chunk>): void {
    if (this.#open === undefined) return
    out.push({ type: this.#open.kind === "text" ? "text-end" : "reasoning-end", id: this.#open.id })
    this.#open = undefined
  }

  #closeStep(out: Array<Chunk>): void {
    this.#closePart(out)
    if (!this.#step) return
    this.#step = false
    this.#stepHasParts = false
    out.push({ type: "finish-step" })
  }

  #result(out: Array<Chunk>, event: { readonly callId: string; readonly content: string; readonly isError: boolean }): void {
    const asked = this.#calls.get(event.callId)
    if (asked === undefined && !this.#continuing) return
    const toolCallId = event.callId
    const denial = UiParts.denialOf(event.content, event.isError)
    if (asked === true) {
      out.push({
        type: "tool-approval-response",
        approvalId: toolCallId,
        approved: denial === undefined,
        ...(denial?.reason === undefined ? {} : { reason: denial.reason })
      })
    }
    if (denial !== undefined) out.push({ type: "tool-output-denied", toolCallId })
    else if (event.isError) out.push({ type: "tool-output-error", toolCallId, errorText: event.content })
    else out.push({ type: "tool-output-available", toolCallId, output: event.content })
  }
}

/**
 * An encoder for the assistant message `messageId`. `continuing`: the stream goes on with a
 * message the client holds (the run after its approvals were answered): it starts with the same
 * message id, so `ai` adds to that message, and repeats `answers`, the answers the client sent.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: { readonly messageId: string; readonly continuing?: boolean; readonly answers?: ReadonlyArray<Answer> }): Encoder =>
  new Encoder(options)

/**
 * The parts a run's messages (what it added to the history) amount to, as `readUIMessageStream`
 * builds them from the encoder's stream of that run, in their JSON form. `answers`: the answers
 * people gave to the calls that asked (the history records a denial, never an approval).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromHistory = (messages: ReadonlyArray<Message.Message>, answers?: ReadonlyArray<Answer>): Array<UiPart> =>
  UiParts.fromHistory(messages, answers)

// ---------------------------------------------------------------------------------------------
// What a chat request carries
// ---------------------------------------------------------------------------------------------

/** The most messages of one chat request. @since 0.1.0 @category constants */
export const MAX_MESSAGES = 1_000

/** The most parts of one message. @since 0.1.0 @category constants */
export const MAX_PARTS = 1_000

/** The most characters of an id (of the chat, a message, a call). @since 0.1.0 @category constants */
export const MAX_ID_CHARS = 255

/** The most characters of any string of a part (a prompt's text included: 1 Mi). @since 0.1.0 @category constants */
export const MAX_TEXT_CHARS = 1024 * 1024

const Id = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(MAX_ID_CHARS))

/** A part's own bounds: its nesting is what JsonLimits allows a value from outside, below the request's three levels. */
const partLimits: JsonLimits.Limits = { ...JsonLimits.defaults, maxDepth: JsonLimits.MAX_DEPTH - 3, maxStringChars: MAX_TEXT_CHARS }

const Part = Schema.Record(Schema.String, Schema.Unknown).check(Schema.makeFilter((part) => {
  if (typeof part.type !== "string" || part.type.length > MAX_ID_CHARS) return `a part with a "type" of at most ${MAX_ID_CHARS} characters`
  const refused = JsonLimits.check(part, partLimits)
  return refused === undefined ? undefined : `a part within bounds, not one that holds ${refused.description}`
}))

/**
 * A message of the chat as the client sends it: loosely, its parts as records.
 *
 * @since 0.1.0
 * @category models
 */
export const ChatMessage = Schema.Struct({
  id: Id,
  role: Schema.Literals(["system", "user", "assistant"]),
  parts: Schema.Array(Part).check(Schema.isMaxLength(MAX_PARTS))
})
export type ChatMessage = typeof ChatMessage.Type

/**
 * What `DefaultChatTransport` POSTs: the chat's id, its messages, the trigger, and the message to
 * regenerate; other fields an app adds (`body`) are ignored.
 *
 * @since 0.1.0
 * @category models
 */
export const ChatRequest = Schema.Struct({
  id: Id,
  messages: Schema.Array(ChatMessage).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_MESSAGES)),
  trigger: Schema.Literals(["submit-message", "regenerate-message"]),
  messageId: Schema.optionalKey(Id)
})
export type ChatRequest = typeof ChatRequest.Type

/**
 * A chat request that asks nothing the server can run.
 *
 * @since 0.1.0
 * @category errors
 */
export class ChatRequestError extends Schema.TaggedError<ChatRequestError>()("ChatRequestError", {
  reason: Schema.Literals(["NoPrompt"]),
  chatId: Schema.String
}) {
  override get message() {
    return `UiMessageStream: chat ${this.chatId} ends with no user message holding text to run`
  }
}

/**
 * The prompt to run: the text of the request's last message, a user's (its text parts joined by
 * new lines); a request ending otherwise (an assistant message: a continuation) is refused.
 *
 * @since 0.1.0
 * @category combinators
 */
export const promptOf = (request: ChatRequest): Result.Result<string, ChatRequestError> => {
  const last = request.messages.at(-1)
  const texts = last?.role !== "user"
    ? []
    : last.parts.flatMap((part) => (part.type === "text" && typeof part.text === "string" && part.text !== "" ? [part.text] : []))
  return texts.length === 0 ? Result.fail(new ChatRequestError({ reason: "NoPrompt", chatId: request.id })) : Result.succeed(texts.join("\n"))
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> => typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The answers the request's last message carries, when it is an assistant's: its tool parts in
 * state `approval-responded`, in their order. Empty for any other request.
 *
 * @since 0.1.0
 * @category combinators
 */
export const answersOf = (request: ChatRequest): ReadonlyArray<Answer> => {
  const last = request.messages.at(-1)
  if (last?.role !== "assistant") return []
  return last.parts.flatMap((part): Array<Answer> => {
    const { approval, toolCallId } = part
    const isTool = typeof part.type === "string" && (part.type.startsWith("tool-") || part.type === "dynamic-tool")
    if (!isTool || part.state !== "approval-responded" || !isRecord(approval) || typeof approval.approved !== "boolean") return []
    if (typeof toolCallId !== "string" || toolCallId === "" || toolCallId.length > MAX_ID_CHARS) return []
    return [typeof approval.reason === "string" && approval.reason !== ""
      ? { callId: toolCallId, approved: approval.approved, reason: approval.reason }
      : { callId: toolCallId, approved: approval.approved }]
  })
}
