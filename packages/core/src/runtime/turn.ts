/**
 * turn — one model request of a run: the `Request` action performed.
 *
 * The request goes out with the session's tools (with `submit` when the run wants a typed answer
 * on the submit path, or the Schema itself on the native path) and the run's model options over
 * the agent's. Its parts stream in: text and thinking deltas are published as they come (the
 * text redacted chunk by chunk, a secret split across deltas replaced whole), tokens counted in
 * the session's usage as they arrive (a reply that breaks off was still paid for), and the reply
 * folded into one message with its tokens and finish. Under a real tracer the request is a
 * `chat <model>` span (genAi.ts), its failure redacted.
 */
import { type Cause, Effect, Stream } from "effect"
import type * as Loop from "../Loop.ts"
import { assistant, type AssistantMessage } from "../Message.ts"
import * as Model from "../Model.ts"
import type { ModelError } from "../ModelError.ts"
import * as Output from "../Output.ts"
import * as Redactor from "../Redactor.ts"
import * as TraceContent from "../TraceContent.ts"
import * as Tracing from "../Tracing.ts"
import * as GenAi from "./genAi.ts"
import type { Conversation } from "./Conversation.ts"
import type { Publisher, Run } from "./Run.ts"

/** What a model request gives back: the reply as one message, its tokens and why it ended. */
export interface Reply {
  readonly message: AssistantMessage
  readonly usage: Model.Usage
  readonly finishReason: Model.FinishReason
}

/**
 * A tool list with `submit` added, made once per list and Schema and shared by every session of
 * the agent (kept here, not per session: an idle session holds none).
 */
const submitLists = new WeakMap<ReadonlyArray<Model.ToolSpec>, { readonly output: Output.Output; readonly tools: ReadonlyArray<Model.ToolSpec> }>()

/** The session's tools and `submit` (the list is sent every turn). */
const withSubmit = (specs: ReadonlyArray<Model.ToolSpec>, output: Output.Output): ReadonlyArray<Model.ToolSpec> => {
  const made = submitLists.get(specs)
  if (made !== undefined && made.output === output) return made.tools
  const tools = [...specs, Output.submitTool(output)]
  submitLists.set(specs, { output, tools })
  return tools
}

/** One model request, in a `chat <model>` span when the run is traced; its failure reaches the span redacted. */
export const request = <R>(
  conversation: Conversation<R>,
  events: Publisher,
  run: Run,
  request: Loop.Request,
  turn: number
): Effect.Effect<Reply, ModelError> => {
  const agentOptions = conversation.agent.modelOptions
  const options = run.options?.modelOptions === undefined ? agentOptions : { ...agentOptions, ...run.options.modelOptions }
  const requested = streamed(conversation, events, run, request, turn, options)
  if (!run.traced) return requested
  const [name, span] = GenAi.chat(conversation.model.name, conversation.id, options)
  const redact = conversation.redact
  const failed = <E>(cause: Cause.Cause<E>) => Redactor.redactCause(redact, cause)
  return Effect.withFiber((fiber) => {
    if (!fiber.getRef(TraceContent.TraceContent)) return Tracing.within(requested, name, span, { ended: GenAi.replied, failed })
    // The program opted in: what was sent and said, redacted (genAi.ts).
    const attributes = { ...span.attributes, ...GenAi.requestContent(request, redact) }
    return Tracing.within(requested, name, { ...span, attributes }, {
      ended: (reply) => ({ ...GenAi.replied(reply), ...GenAi.replyContent(reply, redact) }),
      failed
    })
  })
}

/** The request's deltas published as they stream, the reply folded into a message. */
const streamed = <R>(
  conversation: Conversation<R>,
  events: Publisher,
  run: Run,
  request: Loop.Request,
  turn: number,
  options: Model.Options | undefined
): Effect.Effect<Reply, ModelError> =>
  Effect.gen(function*() {
    yield* events.publish(run, { _tag: "TurnStart", turn }, true)
    const parts: Array<Model.Part> = []
    const output = run.options?.output
    const model = conversation.model
    const specs = conversation.tools.specs
    const stream = model.stream(
      output === undefined
        ? { system: request.system, messages: request.messages, tools: specs, options }
        : model.nativeOutput === true
        ? { system: request.system, messages: request.messages, tools: specs, options, output: Output.spec(output) }
        : { system: request.system, messages: request.messages, tools: withSubmit(specs, output), options }
    )
    const exact = conversation.streamed
    yield* Stream.runForEach(exact === Redactor.none ? stream : redactText(stream, exact), (part) => {
      parts.push(part)
      if (part._tag === "TextDelta") return events.publish(run, { _tag: "TextDelta", text: part.text }, true)
      if (part._tag === "ThinkingDelta") return events.publish(run, { _tag: "ThinkingDelta", text: part.text }, true)
      if (part._tag === "Retry") return events.publish(run, { _tag: "ModelRetry", attempt: part.attempt, reason: part.reason, delay: part.delay }, true)
      // Counted as it arrives: a reply that breaks off midway was still paid for.
      if (part._tag === "Usage") conversation.spend(part)
      return Effect.void
    })
    const usage = Model.usageOf(parts)
    yield* events.publish(run, { _tag: "TurnEnd", turn, usage }, true)
    let finishReason: Model.FinishReason = "other"
    for (const part of parts) if (part._tag === "Finish") finishReason = part.reason
    return { message: Model.toMessage(parts), usage, finishReason }
  })

/**
 * How the history keeps a message of calls (`Loop.receiveCompletion`): their arguments redacted,
 * so the model's next requests, the run's messages and the spans never hold a value the model
 * wrote into a call (a caller's secret in a sub-agent's prompt, a key a gateway put there); the
 * tools receive them as written. Nothing to do for a session without secrets.
 */
export const shown = (redact: (text: string) => string): ((message: AssistantMessage) => AssistantMessage) | undefined =>
  redact === Redactor.none.redact
    ? undefined
    : (message) => assistant(message.parts.map((part) => (part._tag === "ToolCall" ? { ...part, input: Redactor.redactValue(redact, part.input) } : part)))

/**
 * A reply whose text deltas are redacted as they stream (a gateway can write a key into the text
 * itself): an end that could begin a secret waits for the next delta, and is let out before any
 * other part and at the end. Thinking is left as it came: a signed block must go back unchanged.
 */
const redactText = (parts: Stream.Stream<Model.Part, ModelError>, redactor: Redactor.Service) =>
  Stream.suspend(() => {
    const text = Redactor.chunks(redactor)
    const held = (): Array<Model.Part> => {
      const rest = text.end()
      return rest === "" ? [] : [{ _tag: "TextDelta", text: rest }]
    }
    return Stream.concat(
      Stream.flatMap(parts, (part) => {
        if (part._tag !== "TextDelta") return Stream.fromIterable([...held(), part])
        const shown = text.next(part.text)
        return shown === "" ? Stream.empty : Stream.succeed<Model.Part>({ _tag: "TextDelta", text: shown })
      }),
      Stream.suspend(() => Stream.fromIterable(held()))
    )
  })
