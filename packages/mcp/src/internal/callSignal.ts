/**
 * callSignal — the abort signal a `tools/call` hands the SDK, without an `AbortController`.
 *
 * The SDK reads four things of a request's signal: `aborted`, `reason`, and `addEventListener` /
 * `removeEventListener` of `"abort"` (to send `notifications/cancelled` when it fires, and to stop
 * listening once the answer came; an `input_required` flow links its own controller to it the
 * same way). A real `AbortController` per call, with Node's `EventTarget` behind its signal, cost
 * 10–20 % of a call with 1,000 in flight (bench/mcp.ts, concurrent: 1.11–1.25× the raw client
 * with one, 0.89–0.98× without). This is those four and nothing else; `abort` fires its listeners
 * once.
 */

type Listener = () => void

/** @internal */
export class CallSignal {
  aborted = false
  reason: unknown = undefined
  #listeners: Array<Listener> | undefined = undefined

  addEventListener(_type: "abort", listener: Listener): void {
    if (this.aborted) return
    ;(this.#listeners ??= []).push(listener)
  }

  removeEventListener(_type: "abort", listener: Listener): void {
    const at = this.#listeners?.indexOf(listener) ?? -1
    if (at !== -1) this.#listeners!.splice(at, 1)
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason
  }

  abort(reason: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    const listeners = this.#listeners
    this.#listeners = undefined
    if (listeners !== undefined) for (const listener of listeners) listener()
  }

  /** What the SDK's options type calls it: the four members above are all it reads. */
  get asAbortSignal(): AbortSignal {
    return this as unknown as AbortSignal
  }
}
