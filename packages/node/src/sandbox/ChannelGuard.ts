/**
 * ChannelGuard — the host's side of a child's Node IPC channel bounded: a child that sends a line
 * longer than a limit, or one that is not JSON, is cut off rather than taking the program down.
 *
 * Node's JSON IPC reader keeps a message until its newline without bound (the host's memory) and
 * parses each line where nothing catches what it throws (the host's process): text from the
 * launcher is text from inside the sandbox (docs/decisions/0070). Node has no public hook for
 * either, so this wraps the channel handle's `onread`, found by its symbols (`kChannelHandle` on
 * the child, `kJSONBuffer` on the handle); a Node without them gets no guard, and `guard` says so.
 */
import type { ChildProcess } from "node:child_process"

type Handle = Record<PropertyKey, unknown> & { onread?: unknown }

const symbol = (owner: object, description: string): symbol | undefined =>
  Object.getOwnPropertySymbols(owner).find((key) => key.description === description)

/**
 * Bounds `child`'s IPC channel (JSON serialisation): once a message not yet ended holds more than
 * `maxLength` characters, or a line fails to parse, the channel is closed and `hostile` told why
 * (once). Returns false, doing nothing, where this Node keeps its channel otherwise.
 *
 * @since 0.1.0
 * @category constructors
 */
export const guard = (child: ChildProcess, maxLength: number, hostile: (why: string) => void): boolean => {
  const handleKey = symbol(child, "kChannelHandle")
  const handle = handleKey === undefined ? undefined : (child as unknown as Record<symbol, unknown>)[handleKey]
  if (typeof handle !== "object" || handle === null) return false
  const channel = handle as Handle
  const bufferKey = symbol(channel, "kJSONBuffer")
  const onread = channel.onread
  if (bufferKey === undefined || typeof onread !== "function") return false
  let cut = false
  const stop = (why: string) => {
    if (cut) return
    cut = true
    hostile(why)
    if (child.connected) child.disconnect()
  }
  channel.onread = function(this: unknown, ...args: ReadonlyArray<unknown>) {
    if (cut) return
    try {
      onread.apply(this, args)
    } catch (error) {
      return stop(`sent a message that is not JSON (${error instanceof Error ? error.message : String(error)})`)
    }
    const pending = channel[bufferKey]
    if (typeof pending === "string" && pending.length > maxLength) stop(`sent a message over ${maxLength} characters`)
  }
  return true
}
