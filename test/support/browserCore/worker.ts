/**
 * The Web Worker's entry module (bundled by build.ts, started by page.ts): given the loopback
 * server's URL in a message, it makes the runs of agent.ts on the worker's thread and posts back
 * their report, or why they failed.
 */
import { type Report, runBoth } from "./agent.ts"

/** What the worker posts back. */
export type Answer =
  | { readonly _tag: "Ran"; readonly report: Report }
  | { readonly _tag: "Failed"; readonly error: string }

// The root tsconfig has no WebWorker library: the worker's global scope, as far as it is used.
interface WorkerScope {
  onmessage: ((event: { readonly data: string }) => void) | null
  postMessage(answer: Answer): void
}

const scope = globalThis as unknown as WorkerScope

scope.onmessage = ({ data: baseUrl }) => {
  runBoth(baseUrl).then(
    (report) => scope.postMessage({ _tag: "Ran", report }),
    (error: unknown) => scope.postMessage({ _tag: "Failed", error: String(error) })
  )
}
