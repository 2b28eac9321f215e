/**
 * eventJson — a session event as the JSON the server sends and stores: its Schema's JSON encoding
 * (a `ModelRetry`'s delay as its JSON form), and back.
 */
import { Schema } from "effect"
import * as SessionEvent from "@condukt/core/SessionEvent"

const codec = Schema.toCodecJson(SessionEvent.SessionEvent)

/** The event as its JSON value (an object). */
export const toJson = (event: SessionEvent.SessionEvent): Record<string, unknown> => Schema.encodeSync(codec)(event) as Record<string, unknown>

/** The event as JSON text. */
export const encode = (event: SessionEvent.SessionEvent): string => JSON.stringify(toJson(event))

/** The event `text` holds (what `encode` wrote); throws on anything else. */
export const decode = (text: string): SessionEvent.SessionEvent => Schema.decodeUnknownSync(codec)(JSON.parse(text))
