/**
 * History — a conversation as an append-only log of messages.
 *
 * A session appends a few messages per turn for as long as it lives, and every model request reads
 * the whole conversation. Copying an array per transition made a long session slower with every
 * run, so a `History` is an immutable view (`length` messages) over a buffer that only grows:
 * appending to the newest view pushes onto the shared buffer (O(1) amortised), and appending to an
 * older view copies its prefix first, so no view ever sees another's messages. Reading is by
 * iteration, `at`, or `toArray` (one copy, cached per view). The module refuses mutation: nothing
 * in the buffer below a view's length ever changes.
 */
import type { Message } from "./Message.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * An immutable sequence of messages.
 *
 * @since 0.1.0
 * @category models
 */
/** Below this many messages, appending copies the buffer to its exact size instead of growing it. */
const SHORT = 8

export class History implements Iterable<Message> {
  readonly #buffer: Array<Message>
  readonly length: number
  #array: ReadonlyArray<Message> | undefined

  /** @internal use `empty`, `fromIterable` and `append` */
  constructor(buffer: Array<Message>, length: number) {
    this.#buffer = buffer
    this.length = length
  }

  /** The message at `index` (negative counts from the end), if any. */
  at(index: number): Message | undefined {
    const i = index < 0 ? this.length + index : index
    return i >= 0 && i < this.length ? this.#buffer[i] : undefined
  }

  *[Symbol.iterator](): Iterator<Message> {
    for (let i = 0; i < this.length; i++) yield this.#buffer[i]!
  }

  /** @internal */
  appendAll(messages: ReadonlyArray<Message>): History {
    if (messages.length === 0) return this
    // Only the newest view may extend the buffer in place; an older one forks a copy. A short
    // history is copied exactly: a first push would reserve room for 17 (a waiting session's
    // two messages held 152 bytes of buffer), and copying a few messages costs less.
    if (this.length < SHORT) return new History(this.#buffer.slice(0, this.length).concat(messages), this.length + messages.length)
    const buffer = this.#buffer.length === this.length ? this.#buffer : this.#buffer.slice(0, this.length)
    for (const message of messages) buffer.push(message)
    return new History(buffer, buffer.length)
  }

  /** @internal */
  startsWith(prefix: History): boolean {
    // Views over one buffer agree below the shorter one's length: nothing there ever changes.
    // Over two (a short history copied, a fork), the same messages in the same places agree.
    if (prefix.length > this.length) return false
    if (prefix.#buffer === this.#buffer) return true
    for (let i = 0; i < prefix.length; i++) if (prefix.#buffer[i] !== this.#buffer[i]) return false
    return true
  }

  /** @internal */
  toArray(): ReadonlyArray<Message> {
    return (this.#array ??= this.#buffer.slice(0, this.length))
  }

  toJSON(): ReadonlyArray<Message> {
    return this.toArray()
  }
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

/**
 * A history with no messages.
 *
 * @since 0.1.0
 * @category constructors
 */
export const empty = (): History => new History([], 0)

/**
 * A history holding `messages`, in order.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromIterable = (messages: Iterable<Message>): History => {
  const buffer = Array.from(messages)
  return new History(buffer, buffer.length)
}

// ---------------------------------------------------------------------------------------------
// Combinators
// ---------------------------------------------------------------------------------------------

/**
 * A new history with `messages` after those of `self`; `self` is unchanged.
 *
 * @since 0.1.0
 * @category combinators
 */
export const append = (self: History, ...messages: ReadonlyArray<Message>): History => self.appendAll(messages)

/**
 * The messages as an array (a copy, made once per history value).
 *
 * @since 0.1.0
 * @category combinators
 */
export const toArray = (self: History): ReadonlyArray<Message> => self.toArray()

/**
 * Whether `self`'s first `prefix.length` messages are `prefix`'s own (the same message values, in
 * the same places), as appending to `prefix` makes them: then a store holding `prefix` can append
 * the rest. A compaction's history, which starts with its summary, never starts with the one it
 * replaced; one holding equal but not the same messages (decoded again) does not either.
 *
 * @since 0.1.0
 * @category combinators
 */
export const startsWith = (self: History, prefix: History): boolean => self.startsWith(prefix)
