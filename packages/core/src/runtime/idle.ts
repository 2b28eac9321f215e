/**
 * idle — the waits for a busy session to be idle (`Session.idle`), by session: a map beside the
 * sessions, not a field of each (a registry of 100,000 idle sessions notices 8 bytes each), made by
 * the first wait and completed by the step that leaves the session idle.
 */
import { Deferred, Effect, Exit } from "effect"

const waits = new WeakMap<object, Deferred.Deferred<void>>()

/** Waits until `busy` says no, for `owner`; at once when it already does. */
export const wait = (owner: object, busy: () => boolean): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (!busy()) return Effect.void
    let waiting = waits.get(owner)
    if (waiting === undefined) waits.set(owner, waiting = Deferred.makeUnsafe<void>())
    return Deferred.await(waiting)
  })

/** Completes `owner`'s wait, unless it is still `busy`. */
export const wake = (owner: object, busy: boolean): void => {
  const waiting = waits.get(owner)
  if (waiting === undefined || busy) return
  waits.delete(owner)
  Deferred.doneUnsafe(waiting, Exit.void)
}
