/**
 * persistence — a session's link to its SessionStore: resuming at start, saving after each
 * completed turn and after a compaction.
 *
 * A save says how many messages are new since the previous one when the history was only
 * appended to since (its first messages the saved ones, see `History.startsWith`; with or without
 * a batch of calls running or waiting), so the store can append;
 * after a compaction, a failed save or a resume it is a rewrite. Saves are serialised and cannot
 * be interrupted halfway (an abort waits for the save it started). A save that fails is logged and
 * the session goes on: the next save rewrites, so nothing is lost once the store is back. A store
 * that throws (a defect) is logged the same way. A save
 * another writer got to first (`Conflict`: another process saved the same session since) is logged
 * the same way and overwrites nothing; every later save of this session fails the same way.
 *
 * What a store writes has passed through the session's redaction: the assigns (every string,
 * keys included), the messages' text and tool-call input, the agent, model and system prompt. The
 * session keeps its own values in memory; a session resumed from the store sees `[REDACTED:NAME]`
 * where a secret was. Opaque provider data (signed or encrypted thinking, provider blocks, images)
 * is stored as it came: rewriting it would make the provider refuse it.
 */
import { Clock, Effect, JsonSchema, Option, Schema, SchemaRepresentation, Semaphore } from "effect"
import * as History from "../History.ts"
import * as JsonLimits from "../JsonLimits.ts"
import * as Loop from "../Loop.ts"
import type * as Message from "../Message.ts"
import type * as Model from "../Model.ts"
import type * as Output from "../Output.ts"
import { none, redactValue } from "../Redactor.ts"
import type * as SessionStore from "../SessionStore.ts"
import { Corrupt } from "../SessionStoreError.ts"
import * as Snapshot from "../Snapshot.ts"
import type { RunOptions } from "./Run.ts"

export interface Persistence {
  readonly store: SessionStore.Service
  readonly fields: Pick<Snapshot.Snapshot, "id" | "agent" | "model" | "system" | "createdAt">
  readonly lock: Semaphore.Semaphore
  /** The history last saved whole, if the store holds it. */
  saved: History.History | undefined
  /** The messages of `saved` as the store holds them (redacted). */
  stored: ReadonlyArray<Message.Message>
  /** Whether the last save held a batch (calls running or waiting for approval): an abort saves again without it. */
  batched: boolean
}

export interface Resumed {
  readonly state: Loop.State
  readonly assigns: Readonly<Record<string, unknown>>
  readonly persistence: Persistence | undefined
  /** The calls of the last message that were waiting for approval when the snapshot was saved. */
  readonly batch?: Snapshot.Batch | undefined
}

/**
 * The session's starting state: its snapshot's history and assigns when the store has one for
 * `id`, else a fresh loop and the seed assigns. `system` is the prompt sent (with project
 * instructions); `configured` is the one the snapshot records.
 */
export const resume = Effect.fnUntraced(function*(options: {
  readonly store: SessionStore.Service | undefined
  readonly id: string
  readonly agent: string
  readonly model: string
  readonly configured: string | undefined
  readonly system: string | undefined
  readonly maxTurns: number
  readonly assigns: Readonly<Record<string, unknown>>
}) {
  const fresh = Loop.make({ system: options.system, maxTurns: options.maxTurns })
  if (options.store === undefined) return { state: fresh, assigns: options.assigns, persistence: undefined } satisfies Resumed
  const loaded = yield* options.store.load(options.id)
  const fields = {
    id: options.id,
    agent: options.agent,
    model: options.model,
    ...(options.configured === undefined ? {} : { system: options.configured })
  }
  const lock = yield* Semaphore.make(1)
  if (Option.isNone(loaded)) {
    const createdAt = yield* Clock.currentTimeMillis
    return {
      state: fresh,
      assigns: options.assigns,
      persistence: { store: options.store, fields: { ...fields, createdAt }, lock, saved: undefined, stored: [], batched: false }
    } satisfies Resumed
  }
  const history = History.fromIterable(loaded.value.messages)
  const batch = loaded.value.batch
  const state = Loop.make({ system: options.system, maxTurns: options.maxTurns, history })
  return {
    // A batch waiting for approval: the loop waits for the tools of the last message again.
    state: batch === undefined ? state : Loop.awaitTools(state),
    batch,
    assigns: loaded.value.assigns,
    // A snapshot of an older version is rewritten in the current one on the next save.
    persistence: {
      store: options.store,
      fields: { ...fields, createdAt: loaded.value.createdAt || (yield* Clock.currentTimeMillis) },
      lock,
      saved: loaded.value.version === Snapshot.CURRENT_VERSION ? history : undefined,
      stored: loaded.value.messages,
      batched: batch !== undefined
    }
  } satisfies Resumed
})

/** The message as a store may keep it: what came from outside redacted, opaque provider data as it came. */
const redactMessage = (redact: (text: string) => string, message: Message.Message): Message.Message => {
  switch (message._tag) {
    case "UserMessage":
      return { ...message, content: redact(message.content) }
    case "ToolResultMessage":
      return { ...message, content: redact(message.content) }
    case "AssistantMessage":
      return {
        ...message,
        parts: message.parts.map((part): Message.AssistantPart => {
          switch (part._tag) {
            case "Text":
              return { ...part, text: redact(part.text) }
            case "Thinking":
              // A signed or encrypted block must go back to its provider byte for byte.
              return part.signature === undefined && part.redacted === undefined ? { ...part, text: redact(part.text) } : part
            case "ToolCall":
              return { ...part, input: redactValue(redact, part.input) }
            case "Provider":
              return part
          }
        })
      }
  }
}

/** The messages of `history` as the store keeps them: those it already holds, then the new ones redacted. */
const redactedMessages = (
  persistence: Persistence,
  history: History.History,
  appending: boolean,
  redact: (text: string) => string
): ReadonlyArray<Message.Message> => {
  const messages = appending ? [...persistence.stored] : []
  for (let i = messages.length; i < history.length; i++) messages.push(redactMessage(redact, history.at(i)!))
  return messages
}

/**
 * Saves `history` and `assigns` as the session's snapshot, through the session's `redact`, with
 * the batch of calls waiting for approval when there is one (`batchOf`, read once the save's turn
 * comes, so saves queued behind each other never write an older batch over a newer one).
 */
export const commit = (
  persistence: Persistence | undefined,
  history: History.History,
  assigns: Readonly<Record<string, unknown>>,
  redact: (text: string) => string,
  batchOf?: () => Snapshot.Batch
): Effect.Effect<void> => {
  if (persistence === undefined) return Effect.void
  return Semaphore.withPermits(persistence.lock, 1)(Effect.gen(function*() {
    const batch = batchOf?.()
    const saved = persistence.saved
    const appending = saved !== undefined && History.startsWith(history, saved)
    // A save with a batch appends too: each save says whether a batch runs (a store keeps the last one's).
    const appended = appending ? history.length - saved.length : undefined
    const { agent, model, system, ...fields } = persistence.fields
    const updatedAt = yield* Clock.currentTimeMillis
    // What throws while redacting (a getter in the assigns) fails this save like a store would.
    const snapshot = yield* Effect.try({
      try: () =>
        Snapshot.make({
          ...fields,
          agent: redact(agent),
          model: redact(model),
          ...(system === undefined ? {} : { system: redact(system) }),
          // Messages already stored were redacted when they were saved: only the new ones are redacted now.
          messages: redact === none.redact ? History.toArray(history) : redactedMessages(persistence, history, appending, redact),
          assigns: redactValue(redact, assigns),
          updatedAt,
          ...(batch === undefined ? {} : { batch: redactValue(redact, batch) })
        }),
      catch: (cause) => new Corrupt({ description: `it cannot be redacted: ${cause instanceof Error ? cause.message : "unknown failure"}` })
    })
    persistence.saved = undefined
    yield* persistence.store.save(snapshot, { appended })
    persistence.saved = history
    persistence.stored = snapshot.messages
    persistence.batched = batch !== undefined
  })).pipe(
    Effect.catch((error) => Effect.logWarning(redact(`Session ${persistence.fields.id}: not saved: ${error.message}`))),
    // A program's own store that throws (its encoding unguarded: a cycle, a stack overflow) fails
    // this save as a failure would, rather than the session for good.
    Effect.catchDefect((defect) =>
      Effect.logWarning(redact(`Session ${persistence.fields.id}: not saved: the store failed: ${defect instanceof Error ? defect.message : String(defect)}`))
    ),
    Effect.uninterruptible
  )
}

// ---------------------------------------------------------------------------------------------
// A run as its batch keeps it
// ---------------------------------------------------------------------------------------------

/** Every model option is kept at a restart: one `Snapshot.RunOptions` lacks fails to compile here. */
export const everyOptionKept: Record<Exclude<keyof Model.Options, keyof NonNullable<Snapshot.RunOptions["modelOptions"]>>, never> = {}

const documents = new WeakMap<Output.Output, NonNullable<Snapshot.RunOptions["output"]>>()

/** `options` as a batch keeps them (JSON: unset keys dropped, the `output` Schema as its JSON Schema), or none. */
export const savedOptions = (options: RunOptions | undefined): Snapshot.RunOptions | undefined => {
  if (options === undefined) return undefined
  const { modelOptions, output, outputRetries } = options
  let document = output === undefined ? undefined : documents.get(output)
  if (output !== undefined && document === undefined) {
    const made = Schema.toJsonSchemaDocument(output, { onExcessProperty: "error" })
    document = { schema: made.schema, definitions: made.definitions }
    documents.set(output, document)
  }
  const saved: Snapshot.RunOptions = {
    ...(modelOptions === undefined ? {} : { modelOptions: JSON.parse(JSON.stringify(modelOptions)) as NonNullable<Snapshot.RunOptions["modelOptions"]> }),
    ...(outputRetries === undefined ? {} : { outputRetries }),
    ...(document === undefined ? {} : { output: document })
  }
  return Object.keys(saved).length === 0 ? undefined : saved
}

/**
 * Where the loop's run stands, with its settings: what a save of its batch records. A request due
 * (the results saved, the model not asked yet) is not counted: the continued run makes it.
 */
export const savedRun = (loop: Loop.State, options: Snapshot.RunOptions | undefined): Snapshot.Run | undefined =>
  loop.progress === undefined ? undefined : {
    turn: loop.status === "AwaitingCompletion" ? loop.turn - 1 : loop.turn,
    ...loop.progress,
    ...(loop.then === undefined ? {} : { then: loop.then }),
    ...(options === undefined ? {} : { options })
  }

/** Where a run stood, from its batch: what the loop restores. */
export const savedLoop = (run: Snapshot.Run | undefined): Loop.Saved | undefined => {
  if (run === undefined) return undefined
  const { finishReason, from, retries, then, turn, usage } = run
  return { turn, progress: { from, usage, finishReason, retries }, then }
}

/**
 * The settings of a run continued from a store's batch. Its `output` comes back from its JSON
 * Schema (the store's text is input: bounded by JsonLimits first); one that does not is logged and
 * the run goes on without it, its answer the model's text.
 */
export const revivedOptions = (saved: Snapshot.RunOptions | undefined, sessionId: string): Effect.Effect<RunOptions | undefined> => {
  if (saved === undefined) return Effect.succeed(undefined)
  const { output, ...rest } = saved
  if (output === undefined) return Effect.succeed(rest)
  const imported = Effect.try({
    try: () => {
      const refused = JsonLimits.check(output)
      if (refused !== undefined) throw new Error(`it holds ${refused.description}`)
      const document = JsonSchema.fromSchemaDraft2020_12(output.schema as JsonSchema.JsonSchema)
      // An imported schema needs no service to decode.
      return SchemaRepresentation.fromJsonSchemaDocument({ ...document, definitions: { ...document.definitions, ...output.definitions as JsonSchema.Definitions } }) as Output.Output
    },
    // One line, bounded: the store's text may say anything.
    catch: (cause) => (cause instanceof Error ? cause.message : String(cause)).replace(/\s*\n\s*/g, " ").trim().slice(0, 300)
  })
  return imported.pipe(
    Effect.map((schema): RunOptions => ({ ...rest, output: schema })),
    Effect.catch((why) => Effect.as(Effect.logWarning(`Session ${sessionId}: the continued run's output schema cannot be read back (${why}): its answer is not decoded`), rest))
  )
}
