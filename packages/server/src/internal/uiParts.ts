/**
 * uiParts — the AI SDK's UI message parts (`ai` 7.x `UIMessage.parts`) a Condukt run amounts to,
 * in their JSON form (keys `readUIMessageStream` leaves `undefined` dropped, as a part reads once
 * it crossed the wire), and the few facts about a run's history the encoder and `fromHistory`
 * must agree on: the ids of text and reasoning parts, and what a person's denial looks like.
 *
 * Core marks a denial only by the text the model reads (`Approval.deniedByUser`): a ToolResult
 * and a ToolResultMessage of a denied call hold `Denied by the user[: <reason>]` as an error. An
 * approval leaves no mark at all (the call simply ran), so `fromHistory` takes the answers given.
 */
import * as Approval from "@condukt/core/Approval"
import type * as Message from "@condukt/core/Message"

/** A person's answer to a call that asked (`approvalId` is the call's id). */
export interface Answer {
  readonly callId: string
  readonly approved: boolean
  readonly reason?: string
}

/** The approval a tool part carries once answered: `approved` as the part's state says (`ai` types them so). */
export interface PartApproval<Approved extends boolean = boolean> {
  readonly id: string
  readonly approved: Approved
  readonly reason?: string
}

/** A tool part: `tool-<name>`, in one of the states a finished call ends in. */
export type ToolPart =
  & { readonly type: `tool-${string}`; readonly toolCallId: string; readonly input: unknown }
  & (
    | { readonly state: "input-available" }
    | { readonly state: "output-available"; readonly output: unknown; readonly approval?: PartApproval<true> }
    | { readonly state: "output-error"; readonly errorText: string; readonly approval?: PartApproval<true> }
    | { readonly state: "output-denied"; readonly approval: PartApproval<false> }
  )

/** The parts of an assistant UIMessage a run builds. */
export type UiPart =
  | { readonly type: "step-start" }
  | { readonly type: "text"; readonly text: string; readonly state: "done" }
  | { readonly type: "reasoning"; readonly id: string; readonly text: string; readonly state: "done" }
  | ToolPart

/** The id of the `k`-th text (or reasoning) part of turn `turn` (1-based, as `TurnStart.turn`). */
export const partId = (kind: "text" | "reasoning", turn: number, k: number): string => `${kind}-${turn}-${k}`

const DENIED = Approval.deniedByUser(undefined)
/** The texts of a request nobody answered in time (`Approval.deniedByTimeout`, `deniedByExpiry`), up to their figures. */
const UNANSWERED = [Approval.deniedByTimeout(0).replace(/0ms$/, ""), Approval.deniedByExpiry(0).replace(/1970-.*$/, "")]

/**
 * The denial a tool result's text records (`{ reason }`: the person's reason when one was given,
 * the whole text for a request nobody answered in time), or `undefined` when it is none. Only a
 * call that asked reads these texts, before it ran or (`Error: …`, `Tool.AskRefused`) while it
 * ran; a rule's or a policy's refusal (nobody asked) is an error.
 */
export const denialOf = (content: string, isError: boolean): { readonly reason?: string } | undefined => {
  if (!isError) return undefined
  const text = content.startsWith("Error: ") ? content.slice("Error: ".length) : content
  if (text === DENIED) return {}
  if (text.startsWith(`${DENIED}: `)) return { reason: text.slice(DENIED.length + 2) }
  return UNANSWERED.some((prefix) => text.startsWith(prefix)) ? { reason: content } : undefined
}

/** An approval as a part carries it: `reason` only when there is one (as `ai` sets it). */
export const approvalOf = <Approved extends boolean>(id: string, approved: Approved, reason: string | undefined): PartApproval<Approved> =>
  reason === undefined ? { id, approved } : { id, approved, reason }

/**
 * The state a tool part ends in for a call's result: output, error or a person's denial, with the
 * approval it carries when it asked (`answer`, or the denial's own text).
 */
export const settled = (
  call: { readonly type: `tool-${string}`; readonly toolCallId: string; readonly input: unknown },
  result: { readonly content: string; readonly isError: boolean },
  answer: Answer | undefined
): ToolPart => {
  const denial = denialOf(result.content, result.isError)
  if (denial !== undefined) {
    return { ...call, state: "output-denied", approval: approvalOf(call.toolCallId, false, answer?.reason ?? denial.reason) }
  }
  // An answer that was not an approval left a denial's text; without one, the call ran.
  const asked = answer?.approved === true ? { approval: approvalOf(call.toolCallId, true, answer.reason) } : {}
  return result.isError
    ? { ...call, ...asked, state: "output-error", errorText: result.content }
    : { ...call, ...asked, state: "output-available", output: result.content }
}

/**
 * An assistant message's text and thinking as the encoder streams them: its tool calls and
 * provider blocks taken out (their events come after the turn's text), neighbours of one kind
 * joined (their deltas arrive one after the other), empty ones (a redacted thinking block) dropped.
 */
const streamedTexts = (message: Message.AssistantMessage): ReadonlyArray<{ readonly kind: "text" | "reasoning"; readonly text: string }> => {
  const out: Array<{ kind: "text" | "reasoning"; text: string }> = []
  for (const part of message.parts) {
    if ((part._tag !== "Text" && part._tag !== "Thinking") || part.text === "") continue
    const kind = part._tag === "Text" ? "text" : "reasoning"
    const last = out.at(-1)
    if (last !== undefined && last.kind === kind) last.text += part.text
    else out.push({ kind, text: part.text })
  }
  return out
}

/**
 * The parts `messages` (what a run added to the history: replies and tool results) amount to, as
 * `readUIMessageStream` builds them from the encoder's stream of the run. `answers`: the people's
 * answers to the calls that asked (an approval is nowhere in the history).
 */
export const fromHistory = (messages: ReadonlyArray<Message.Message>, answers: ReadonlyArray<Answer> = []): Array<UiPart> => {
  const byCall = new Map(answers.map((answer) => [answer.callId, answer]))
  const parts: Array<UiPart> = []
  const tools = new Map<string, number>()
  let turn = 0
  for (const message of messages) {
    if (message._tag === "AssistantMessage") {
      turn++
      parts.push({ type: "step-start" })
      const counts = { text: 0, reasoning: 0 }
      for (const { kind, text } of streamedTexts(message)) {
        const id = partId(kind, turn, ++counts[kind])
        parts.push(kind === "text" ? { type: "text", text, state: "done" } : { type: "reasoning", id, text, state: "done" })
      }
      for (const part of message.parts) {
        if (part._tag !== "ToolCall") continue
        tools.set(part.id, parts.length)
        parts.push({ type: `tool-${part.name}`, toolCallId: part.id, state: "input-available", input: part.input })
      }
    } else if (message._tag === "ToolResultMessage") {
      const at = tools.get(message.callId)
      const call = at === undefined ? undefined : parts[at]
      if (at === undefined || call === undefined || call.type === "step-start" || call.type === "text" || call.type === "reasoning") continue
      parts[at] = settled({ type: call.type, toolCallId: call.toolCallId, input: call.input }, message, byCall.get(message.callId))
    }
  }
  return parts
}
