/**
 * The page's entry module (bundled by build.ts): it puts `condukt` on the page's global object
 * for the test to call — `inPage` makes the runs of agent.ts on the page's own thread, `inWorker`
 * starts a module Web Worker from `workerUrl` (worker.ts, bundled apart), asks it for the same
 * runs and hands back its answer. The test reaches the page only through these two functions.
 */
import { type Report, runBoth } from "./agent.ts"
import type { Answer } from "./worker.ts"

// The root tsconfig has no DOM library: the one browser global used here, as far as it is used.
interface WebWorker {
  onmessage: ((event: { readonly data: Answer }) => void) | null
  onerror: ((event: { readonly message: string }) => void) | null
  postMessage(message: string): void
  terminate(): void
}
declare const Worker: new(url: string, options: { readonly type: "module" }) => WebWorker

/** Both runs in a worker started from `workerUrl`, which is ended once it has answered. */
const inWorker = (baseUrl: string, workerUrl: string): Promise<Report> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(workerUrl, { type: "module" })
    worker.onmessage = ({ data }) => {
      worker.terminate()
      if (data._tag === "Ran") resolve(data.report)
      else reject(new Error(`the worker's runs failed: ${data.error}`))
    }
    worker.onerror = ({ message }) => {
      worker.terminate()
      reject(new Error(`the worker failed: ${message}`))
    }
    worker.postMessage(baseUrl)
  })

/** What the page puts on its global object as `condukt`, for the test to call. */
export interface Api {
  readonly inPage: (baseUrl: string) => Promise<Report>
  readonly inWorker: (baseUrl: string, workerUrl: string) => Promise<Report>
}

const api: Api = { inPage: runBoth, inWorker }
Object.assign(globalThis, { condukt: api })
