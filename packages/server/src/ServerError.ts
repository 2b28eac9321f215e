/**
 * ServerError — the answers the server gives when it does not do what was asked, each a Schema
 * class with its HTTP status, so the OpenAPI document lists them and a client decodes them: the
 * body is `{ "_tag": …, "message": … }`, the message a sentence a person or a program can act on.
 *
 * A session another principal owns is `NotFound`, worded as one that does not exist: the answer
 * must not confirm that it does.
 */
import { Schema } from "effect"

/**
 * No credentials, or credentials that name nobody.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", { message: Schema.String }, { httpApiStatus: 401 }) {}

/**
 * No such session (or approval, or workflow) for this principal: never started, started by
 * another, or forgotten.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { message: Schema.String }, { httpApiStatus: 404 }) {}

/**
 * The request cannot be done as it stands (a run while another runs, an answer to a call that does
 * not wait, a session id already taken).
 *
 * @since 0.1.0
 * @category errors
 */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { message: Schema.String }, { httpApiStatus: 409 }) {}

/**
 * A request the server refuses as malformed (a `Last-Event-ID` that is not an event number, a
 * chat request with no prompt, an unknown agent).
 *
 * @since 0.1.0
 * @category errors
 */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", { message: Schema.String }, { httpApiStatus: 400 }) {}

/**
 * A stream asked to resume before the oldest event the server keeps: `oldest` is where the window
 * starts; the history (`GET /sessions/{id}/history`) holds the whole conversation.
 *
 * @since 0.1.0
 * @category errors
 */
export class Gone extends Schema.TaggedError<Gone>()("Gone", { message: Schema.String, oldest: Schema.Int }, { httpApiStatus: 410 }) {}

/**
 * The principal has too many open streams, or sends too many requests: try again later.
 *
 * @since 0.1.0
 * @category errors
 */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", { message: Schema.String }, { httpApiStatus: 429 }) {}

/**
 * The session or the server failed to do what was asked (a session that fails to start, a store
 * that cannot be written): the message says what happened.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unavailable extends Schema.TaggedError<Unavailable>()("Unavailable", { message: Schema.String }, { httpApiStatus: 503 }) {}
