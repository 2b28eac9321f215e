/**
 * Elicitation — a question a session's tool source (an MCP server's `elicitation/create`) puts to
 * the program's user, and the user's answer.
 *
 * A source asks through `ToolSource.StartContext.elicit`; the session answers with the `handler`
 * given at its start, or publishes an `ElicitationRequested` event and waits for
 * `session.respond(id, answer)`; an accepted answer is checked against the form's schema (the
 * source says how) before it goes back. With neither a handler nor anyone reading the session's
 * events, the question is refused with `Unanswerable`; a question waits at most the `timeout`
 * (then it is cancelled), and ends with the run that asked it. This module words and types; the
 * session waits. It refuses to know MCP's wire format or how a schema is checked.
 */
import { Schema } from "effect"
import type { Duration, Effect } from "effect"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * A form's schema: a flat JSON Schema object whose properties are strings, numbers, booleans, or
 * lists of strings (MCP's `requestedSchema`).
 *
 * @since 0.1.0
 * @category models
 */
export const FormSchema = Schema.Struct({
  type: Schema.Literal("object"),
  properties: Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Unknown)),
  required: Schema.optional(Schema.Array(Schema.String))
})
export type FormSchema = typeof FormSchema.Type

/**
 * What an accepted form holds.
 *
 * @since 0.1.0
 * @category models
 */
export type Content = Readonly<Record<string, string | number | boolean | ReadonlyArray<string>>>

/**
 * The user's answer: the form's values, a refusal (`decline`), or a dismissal (`cancel`).
 *
 * @since 0.1.0
 * @category models
 */
export type Answer =
  | { readonly action: "accept"; readonly content: Content }
  | { readonly action: "decline" }
  | { readonly action: "cancel" }

/**
 * A question as a source asks it: who asks, what it says, the form, and how an accepted form is
 * checked (`undefined`: it fits; otherwise why not, in one line).
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly server: string
  readonly message: string
  readonly schema: FormSchema
  readonly validate: (content: Content) => string | undefined
}

/**
 * A question as the program sees it: its id (what `session.respond` names), who asks, what it
 * says, the form.
 *
 * @since 0.1.0
 * @category models
 */
export interface Requested {
  readonly id: string
  readonly server: string
  readonly message: string
  readonly schema: FormSchema
}

/**
 * A program's answer to every question of a session, given at its start.
 *
 * @since 0.1.0
 * @category models
 */
export type Handler = (request: Requested) => Effect.Effect<Answer>

/**
 * How a session answers its sources' questions (`Session.StartOptions.elicitation`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Answers every question; without it, each is an `ElicitationRequested` event for `session.respond`. */
  readonly handler?: Handler | undefined
  /** How long a question waits for an answer before it is cancelled (default: no timer). */
  readonly timeout?: Duration.Input | undefined
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/**
 * `respond` named a question that is not waiting: no such id, or one already answered (or ended by
 * its timeout, its run's end or its server), or the session has stopped (`stopped`): its servers'
 * questions ended with it (docs/decisions/0080).
 *
 * @since 0.1.0
 * @category errors
 */
export class NotPending extends Schema.TaggedError<NotPending>()("ElicitationNotPending", {
  sessionId: Schema.String,
  id: Schema.String,
  stopped: Schema.optional(Schema.Boolean)
}) {
  override get message() {
    return this.stopped === true
      ? `Session ${this.sessionId} is stopped: question ${this.id} waits for no answer in it (it ended with the session)`
      : `Session ${this.sessionId}: no question ${this.id} is waiting for an answer (unknown, or already answered)`
  }
}

/**
 * An accepted answer the form does not take: the question still waits, for a better one.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidAnswer extends Schema.TaggedError<InvalidAnswer>()("ElicitationInvalidAnswer", {
  sessionId: Schema.String,
  id: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `Session ${this.sessionId}: the answer to question ${this.id} does not fit its form: ${this.description}`
  }
}

/**
 * Nobody can answer a question: the session has no handler and nobody reads its events, or its
 * handler answered what the form does not take. `description` is what the source tells its server.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unanswerable extends Schema.TaggedError<Unanswerable>()("ElicitationUnanswerable", {
  description: Schema.String
}) {
  override get message() {
    return this.description
  }
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * The form filled in with `content`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const accept = (content: Content): Answer => ({ action: "accept", content })

/**
 * The user refused to answer.
 *
 * @since 0.1.0
 * @category constructors
 */
export const decline: Answer = { action: "decline" }

/**
 * The user dismissed the question without choosing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const cancel: Answer = { action: "cancel" }

/**
 * Why a question of a session without a handler, asked while nobody reads its events, is refused.
 *
 * @since 0.1.0
 * @category constructors
 */
export const NOBODY_TO_ASK = "nobody can answer: the session has no elicitation handler and nobody reads its events " +
  "(give Session.start an elicitation handler, or read ElicitationRequested events and answer with session.respond)"

/**
 * Why a question the session's handler answered with values the form does not take is refused.
 *
 * @since 0.1.0
 * @category constructors
 */
export const handlerMisfit = (description: string): string => `the session's elicitation handler answered values the form does not take: ${description}`
