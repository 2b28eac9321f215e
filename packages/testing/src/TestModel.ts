/**
 * TestModel — a scripted `Model` for tests and demos.
 *
 * Each request takes the next scripted reply: text (streamed in chunks), thinking, tool calls,
 * an error, or a delay before any of them. Every request is recorded so a test can assert exactly
 * what was sent. Running out of replies is an error naming the request, never a silent repeat.
 */
import { History, type Message, Model, ModelError } from "@condukt/core"
import { Context, type Duration, Effect, Layer, Stream } from "effect"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** One scripted response: the parts to stream, then optionally a failure. */
export interface Reply {
  readonly parts: ReadonlyArray<Model.Part>
  /** Waits this long (on the Effect clock) before streaming. */
  readonly delay?: Duration.Input | undefined
  /** Fails the stream after its parts. */
  readonly error?: { readonly description: string; readonly retryable: boolean } | undefined
}

/** A request as recorded: its history copied to an array, as it was when the request was made. */
export interface RecordedRequest extends Omit<Model.Request, "messages"> {
  readonly messages: ReadonlyArray<Message.Message>
}

/** @since 0.1.0 @category models */
export interface Service {
  /** Every request received so far, in order. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Scripted replies not used yet. */
  readonly remaining: Effect.Effect<number>
}

/**
 * Access to the recorded requests of the TestModel a layer provides.
 *
 * @since 0.1.0
 * @category services
 */
export class TestModel extends Context.Service<TestModel, Service>()("@condukt/testing/TestModel") {}

/** @since 0.1.0 @category models */
export interface Options {
  /** The model's name (default `test:scripted`). */
  readonly name?: string
  /**
   * Act as a model with native structured output: a run's typed answer is then the final reply's
   * text (script it with `text`), not a call of the `submit` tool.
   */
  readonly nativeOutput?: boolean
}

/** The chunk size text is streamed in unless a reply says otherwise. */
export const DEFAULT_CHUNK_SIZE = 8

// ---------------------------------------------------------------------------------------------
// Replies
// ---------------------------------------------------------------------------------------------

const chunks = (value: string, size: number): Array<string> => {
  const points = Array.from(value)
  const out: Array<string> = []
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""))
  return out
}

/**
 * A text reply, streamed in chunks of `chunkSize` code points.
 *
 * @since 0.1.0
 * @category constructors
 */
export const text = (value: string, options: { readonly chunkSize?: number } = {}): Reply => ({
  parts: chunks(value, Math.max(1, options.chunkSize ?? DEFAULT_CHUNK_SIZE)).map((text) => ({ _tag: "TextDelta", text }))
})

/** @since 0.1.0 @category constructors */
export const thinking = (value: string, options: { readonly chunkSize?: number } = {}): Reply => ({
  parts: chunks(value, Math.max(1, options.chunkSize ?? DEFAULT_CHUNK_SIZE)).map((text) => ({ _tag: "ThinkingDelta", text }))
})

/**
 * A reply calling one tool. Without an `id`, calls are numbered `call_1`, `call_2`… across the
 * model's lifetime.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolCall = (name: string, input: unknown, id?: string): Reply => ({
  parts: [{ _tag: "ToolCall", id: id ?? "", name, input }]
})

/**
 * One reply made of several: text then tool calls in one assistant message, for instance.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reply = (...replies: ReadonlyArray<Reply>): Reply => ({
  parts: replies.flatMap((r) => r.parts),
  delay: replies.find((r) => r.delay !== undefined)?.delay,
  error: replies.find((r) => r.error !== undefined)?.error
})

/**
 * A provider failure, after the parts of `before` (a stream that breaks midway).
 *
 * @since 0.1.0
 * @category constructors
 */
export const error = (description: string, options: { readonly retryable?: boolean; readonly before?: Reply } = {}): Reply => ({
  parts: options.before?.parts ?? [],
  error: { description, retryable: options.retryable ?? false }
})

/** @since 0.1.0 @category constructors */
export const delayed = (delay: Duration.Input, value: Reply): Reply => ({ ...value, delay })

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

const USAGE: Model.Part = { _tag: "Usage", inputTokens: 10, outputTokens: 5 }

/**
 * A scripted model and its recorder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  replies: ReadonlyArray<Reply>,
  options: Options = {}
): Effect.Effect<{ readonly model: Model.Service; readonly recorder: Service }> => Effect.sync(() => {
  const name = options.name ?? "test:scripted"
  // Plain arrays, not Refs of copies: the recorder sits on every turn of a benchmark. A request's
  // history is an immutable view, so it is kept as it came and turned into an array only when a
  // test reads it.
  const requests: Array<Model.Request> = []
  let calls = 0

  const exhausted = (index: number) =>
    Stream.fail(
      new ModelError.ModelError({
        model: name,
        reason: new ModelError.ProviderFailed({
          description: `TestModel: no scripted reply for request ${index + 1} (the script has ${replies.length})`,
          retryable: false
        })
      })
    )

  const partsOf = (scripted: Reply): Array<Model.Part> => {
    const parts: Array<Model.Part> = scripted.parts.map((part) =>
      part._tag === "ToolCall" && part.id === "" ? { ...part, id: `call_${++calls}` } : part
    )
    if (scripted.error === undefined) {
      parts.push(USAGE, { _tag: "Finish", reason: parts.some((p) => p._tag === "ToolCall") ? "tool-calls" : "stop" })
    }
    return parts
  }

  // `Stream.unwrap` of a sync, not `Stream.suspend`: the latter notes every stream it makes in a
  // WeakMap, which a request per turn pays for in the collector (bench/turns.ts).
  const respond = (request: Model.Request): Stream.Stream<Model.Part, ModelError.ModelError> =>
    Stream.unwrap(Effect.sync(() => {
      const index = requests.push(request) - 1
      const scripted = replies[index]
      if (scripted === undefined) return exhausted(index)
      const body = Stream.fromIterable(partsOf(scripted))
      const streamed = scripted.error === undefined
        ? body
        : Stream.concat(body, Stream.fail(new ModelError.ModelError({ model: name, reason: new ModelError.ProviderFailed(scripted.error) })))
      return scripted.delay === undefined ? streamed : Stream.concat(Stream.fromEffect(Effect.sleep(scripted.delay)).pipe(Stream.drain), streamed)
    }))

  return {
    model: Model.Model.of({ name, stream: respond, ...(options.nativeOutput === true ? { nativeOutput: true } : {}) }),
    recorder: TestModel.of({
      requests: Effect.sync(() => requests.map((request): RecordedRequest => ({ ...request, messages: History.toArray(request.messages) }))),
      remaining: Effect.sync(() => Math.max(0, replies.length - requests.length))
    })
  }
})

/**
 * Provides `Model` (scripted by `replies`) and `TestModel` (its recorder).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (replies: ReadonlyArray<Reply>, options: Options = {}): Layer.Layer<Model.Model | TestModel> =>
  Layer.effectContext(Effect.map(make(replies, options), ({ model, recorder }) =>
    Context.make(Model.Model, model).pipe(Context.add(TestModel, recorder))))

/**
 * A model with no script and no recorder, the same on every run: after a user message it calls
 * the tool `name` with `input`; after anything else (the tool's result) it answers `answer`. One
 * value serves any number of sessions at once, where a scripted model's replies would be taken in
 * turn by all of them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const callThenAnswer = (name: string, input: unknown, answer: string): Model.Service =>
  Model.Model.of({
    name: "test:call-then-answer",
    stream: (request) =>
      Stream.fromIterable<Model.Part>(
        request.messages.at(-1)?._tag === "UserMessage"
          ? [{ _tag: "ToolCall", id: "call_1", name, input }, { _tag: "Finish", reason: "tool-calls" }]
          : [{ _tag: "TextDelta", text: answer }, { _tag: "Finish", reason: "stop" }]
      )
  })
