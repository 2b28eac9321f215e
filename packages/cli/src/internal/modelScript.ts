/**
 * modelScript — `condukt run --model-script FILE`: every agent step answered by a scripted model
 * instead of a provider, so a workflow can be tried and tested offline, without a key. The file is
 * a JSON list of replies, one per model request, taken in order across the run (the format of
 * @condukt/testing's `TestModel`, in JSON):
 *
 * - `{ "text": "…" }`: an answer;
 * - `{ "tool_calls": [{ "name": "Read", "input": { "path": "a.txt" } }] }`: tool calls (an `id`
 *   each is optional), with `text` beside them if the reply says something too;
 * - `{ "error": "…" }`: the provider failing that request.
 *
 * A request past the end of the list fails, naming the file; the list is never repeated. The file
 * is read from outside: at most 1 MiB and 10,000 replies, decoded with a schema.
 */
import { Model, ModelError } from "@condukt/core"
import { Effect, FileSystem, Schema, Stream } from "effect"

/** The largest script read (1 MiB). */
export const MAX_BYTES = 1024 * 1024

/** The most replies a script may hold. */
export const MAX_REPLIES = 10_000

const ToolCall = Schema.Struct({
  name: Schema.String,
  input: Schema.optionalKey(Schema.Unknown),
  id: Schema.optionalKey(Schema.String)
})

/** One scripted reply. */
const Reply = Schema.Struct({
  text: Schema.optionalKey(Schema.String),
  tool_calls: Schema.optionalKey(Schema.Array(ToolCall)),
  error: Schema.optionalKey(Schema.String)
})
type Reply = typeof Reply.Type

const Script = Schema.Array(Reply)

/** Why a script cannot be used: the CLI prints `--model-script FILE: <description>` and exits 2. */
export class ModelScriptInvalid extends Schema.TaggedError<ModelScriptInvalid>()("ModelScriptInvalid", {
  file: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `--model-script ${this.file}: ${this.description}`
  }
}

const USAGE: Model.Part = { _tag: "Usage", inputTokens: 10, outputTokens: 5 }

/** The parts of `reply`, the `index`-th of the script: its text, its calls, usage and finish. */
const partsOf = (reply: Reply, index: number): Array<Model.Part> => {
  const calls = (reply.tool_calls ?? []).map((call, i): Model.Part => ({
    _tag: "ToolCall",
    id: call.id ?? `script_${index + 1}_${i + 1}`,
    name: call.name,
    input: call.input ?? {}
  }))
  const text: Array<Model.Part> = reply.text === undefined || reply.text === "" ? [] : [{ _tag: "TextDelta", text: reply.text }]
  return [...text, ...calls, USAGE, { _tag: "Finish", reason: calls.length > 0 ? "tool-calls" : "stop" }]
}

/** A model answering with `replies` in turn, named `script:<file>`. */
export const model = (file: string, replies: ReadonlyArray<Reply>): Model.Service => {
  const name = `script:${file}`
  let taken = 0
  const failure = (description: string) => new ModelError.ModelError({ model: name, reason: new ModelError.ProviderFailed({ description, retryable: false }) })
  return Model.Model.of({
    name,
    stream: () =>
      Stream.unwrap(Effect.sync(() => {
        const index = taken++
        const reply = replies[index]
        if (reply === undefined) {
          return Stream.fail(failure(`${file} has ${replies.length} replies; request ${index + 1} has none (add one to the script)`))
        }
        if (reply.error !== undefined) return Stream.fail(failure(reply.error))
        return Stream.fromIterable(partsOf(reply, index))
      }))
  })
}

/** Reads and decodes the script at `file`. */
export const load = Effect.fnUntraced(function*(file: string) {
  const fs = yield* FileSystem.FileSystem
  const invalid = (description: string) => new ModelScriptInvalid({ file, description })
  const info = yield* Effect.mapError(fs.stat(file), (error) => invalid(error.reason._tag === "NotFound" ? "no such file" : error.message))
  if (info.type !== "File") return yield* invalid("not a regular file")
  if (Number(info.size) > MAX_BYTES) return yield* invalid(`larger than ${MAX_BYTES} bytes (1 MiB), the most a script may have`)
  const text = yield* Effect.mapError(fs.readFileString(file), (error) => invalid(error.message))
  if (text.length > MAX_BYTES) return yield* invalid(`larger than ${MAX_BYTES} bytes (1 MiB), the most a script may have`)
  const json = yield* Effect.try({ try: (): unknown => JSON.parse(text), catch: () => invalid("not JSON") })
  if (Array.isArray(json) && json.length > MAX_REPLIES) return yield* invalid(`more than ${MAX_REPLIES} replies`)
  const replies = yield* Effect.mapError(
    Schema.decodeUnknownEffect(Script)(json, { onExcessProperty: "error" }),
    (error) => invalid(`a JSON list of replies, each {"text": …}, {"tool_calls": [{"name": …, "input": …}]} or {"error": …}: ${error.message}`)
  )
  return model(file, replies)
})
