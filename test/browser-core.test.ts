/**
 * The core where no Node runs (issue 43 item 3, ADR 0094): @condukt/core, @condukt/sandbox-virtual,
 * @condukt/testing and @condukt/providers, bundled by esbuild for a browser
 * (test/support/browserCore/build.ts), run an agent in a real headless Chromium (Debian's, through
 * test/support/browser.ts) — on the page's thread and in a module Web Worker the page starts.
 *
 * Each place makes two runs (test/support/browserCore/agent.ts): Write, Read and Bash in a
 * VirtualSandbox on TestModel, and Read twice with Anthropic's provider over the browser's `fetch`
 * against the loopback server the test starts, which streams the vendor's recorded SSE
 * (packages/providers/test/fixtures). The page, its bundle and the worker's are served at the
 * loopback server's own origin (Playwright answers those three paths; the model's requests reach
 * the server), so the provider's requests are same-origin, as an application's own backend's are.
 * Each place also shows what a browser leaves out: just-bash's gzip, and host mounts (the
 * package's internal/hostMount.browser.ts, which its package.json's `imports` gives `#hostMount`
 * under the `browser` condition).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import * as Loopback from "../packages/providers/test/loopback.ts"
import { launchBrowser } from "./support/browser.ts"
import { API_KEY } from "./support/browserCore/agent.ts"
import { type Bundle, build } from "./support/browserCore/build.ts"
import type { Api } from "./support/browserCore/page.ts"

/** The page's bundle and the worker's. */
const bundles = Effect.all([build("test/support/browserCore/page.ts"), build("test/support/browserCore/worker.ts")], {
  concurrency: 2
})

/**
 * What a bundle holds, from esbuild's metafile: the workspace packages it took source from, the
 * npm packages, the `node:` modules (the one allowed is zlib, which build.ts makes refuse), and
 * which of sandbox-virtual's host-mount modules its `#hostMount` import brought.
 */
const contents = ({ metafile }: Bundle) => {
  const inputs = Object.keys(metafile.inputs)
  const unique = (names: ReadonlyArray<string>) => [...new Set(names)].sort()
  return {
    workspace: unique(inputs.flatMap((input) => /^packages\/([^/]+)\/src\//.exec(input)?.[1] ?? [])),
    npm: unique(inputs.flatMap((input) => /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules)/.exec(input)?.[1] ?? [])),
    node: unique(inputs.filter((input) => /(^|:)node:/.test(input))),
    hostMount: unique(inputs.flatMap((input) => /^packages\/sandbox-virtual\/src\/internal\/(hostMount[^/]*)$/.exec(input)?.[1] ?? []))
  }
}

/** The page at `url`, its module and the worker's answered by Playwright; anything else goes to the server. */
const openPage = (url: string, page: Bundle, worker: Bundle) =>
  Effect.gen(function*() {
    const browser = yield* launchBrowser
    const tab = yield* Effect.promise(() => browser.newPage())
    tab.setDefaultTimeout(30_000)
    const errors: Array<string> = []
    tab.on("pageerror", (error) => errors.push(error.message))
    const files: Record<string, { readonly type: string; readonly body: string }> = {
      "/": { type: "text/html", body: `<!doctype html><title>core</title><script type="module" src="/page.js"></script>` },
      "/page.js": { type: "text/javascript", body: page.code },
      "/worker.js": { type: "text/javascript", body: worker.code }
    }
    yield* Effect.promise(() =>
      tab.context().route((requested) => requested.origin === url && requested.pathname in files, (route) => {
        const file = files[new URL(route.request().url()).pathname]!
        return route.fulfill({ status: 200, contentType: file.type, body: file.body })
      })
    )
    yield* Effect.promise(() => tab.goto(`${url}/`))
    yield* Effect.promise(() => tab.waitForFunction(() => "condukt" in globalThis))
    return { tab, errors }
  })

/** The page's global object, as page.ts fills it. */
type PageGlobal = { readonly condukt: Api }

const inPage = (tab: Page, url: string) =>
  Effect.promise(() => tab.evaluate((baseUrl) => (globalThis as unknown as PageGlobal).condukt.inPage(baseUrl), url))

const inWorker = (tab: Page, url: string) =>
  Effect.promise(() => tab.evaluate((baseUrl) => (globalThis as unknown as PageGlobal).condukt.inWorker(baseUrl, "/worker.js"), url))

// The events both places must stream, their `seq` from their place in the list.
type Payload = { readonly _tag: string; readonly [field: string]: unknown }
const numbered = (events: ReadonlyArray<Payload>) => events.map((event, seq) => ({ ...event, seq }))
const turn = (n: number, inputTokens: number, outputTokens: number, between: ReadonlyArray<Payload>): Array<Payload> => [
  { _tag: "TurnStart", turn: n },
  ...between,
  { _tag: "TurnEnd", turn: n, usage: { inputTokens, outputTokens } }
]
const call = (callId: string, name: string, input: unknown, content: string): Array<Payload> => [
  { _tag: "ToolCall", callId, name, input },
  { _tag: "ToolResult", callId, name, content, isError: false }
]
const text = (...deltas: ReadonlyArray<string>): Array<Payload> => deltas.map((delta) => ({ _tag: "TextDelta", text: delta }))

const todo = "water the plants\nfeed the cat\n"
const bashCommand = "wc -l < notes/todo.txt; tr a-z A-Z < notes/todo.txt"

const scripted = {
  results: [
    `Write: "Wrote notes/todo.txt (2 lines, 30 bytes)"`,
    `Read: "water the plants\\nfeed the cat\\n"`,
    `Bash: "2\\nWATER THE PLANTS\\nFEED THE CAT\\n"`
  ],
  reply: "Two things to do.",
  file: todo,
  events: numbered([
    { _tag: "AgentStart", prompt: "What is on my list?" },
    ...turn(1, 10, 5, []),
    ...call("call-write", "Write", { path: "notes/todo.txt", content: todo }, "Wrote notes/todo.txt (2 lines, 30 bytes)"),
    ...turn(2, 10, 5, []),
    ...call("call-read", "Read", { path: "notes/todo.txt" }, todo),
    ...turn(3, 10, 5, []),
    ...call("call-bash", "Bash", { command: bashCommand }, "2\nWATER THE PLANTS\nFEED THE CAT\n"),
    ...turn(4, 10, 5, text("Two thin", "gs to do", ".")),
    { _tag: "AgentEnd", outcome: "completed" }
  ])
}

// Anthropic's recorded stream (anthropic-tools.sse, then anthropic-final.sse): its thinking,
// a sentence and two Read calls, then the answer in two deltas.
const overFetch = {
  results: [`Read: "alpha\\n"`, `Read: "beta\\n"`],
  reply: "I'll read both files.a.txt says alpha; b.txt says beta.",
  events: numbered([
    { _tag: "AgentStart", prompt: "What do a.txt and b.txt say?" },
    ...turn(1, 472, 89, [
      { _tag: "ThinkingDelta", text: "The user wants both files. " },
      { _tag: "ThinkingDelta", text: "I can read them in parallel." },
      ...text("I'll read both files.")
    ]),
    { _tag: "ToolCall", callId: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "Read", input: { path: "a.txt" } },
    { _tag: "ToolCall", callId: "toolu_02Bq7kLw2cUu5Hn3xYz8aQpR", name: "Read", input: { path: "b.txt" } },
    { _tag: "ToolResult", callId: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "Read", content: "alpha\n", isError: false },
    { _tag: "ToolResult", callId: "toolu_02Bq7kLw2cUu5Hn3xYz8aQpR", name: "Read", content: "beta\n", isError: false },
    ...turn(2, 630, 12, text("a.txt says alpha; ", "b.txt says beta.")),
    { _tag: "AgentEnd", outcome: "completed" }
  ])
}

// just-bash's gzip refuses (node:zlib is not in the bundle) and the script goes on; no host
// directory is mounted, at start (NotSupported) or at run time (no root is allowed).
const leftOut = {
  gzip: { output: "still here\ngzip: zlib is not available in a browser\n", exitCode: 0 },
  mountAtStart: "NotSupported",
  mountAtRunTime: "OutsideAllowedPaths"
}

describe("the core in a browser", () => {
  it.live("the page's and the worker's bundles take core, sandbox-virtual (its host mounts that mount nothing), testing and providers, and no node: module but zlib, refused", () =>
    Effect.gen(function*() {
      const [page, worker] = yield* bundles
      const expected = {
        workspace: ["core", "providers", "sandbox-virtual", "testing"],
        npm: ["balanced-match", "brace-expansion", "diff", "effect", "just-bash", "minimatch", "re2js", "sprintf-js", "turndown"],
        node: ["no-zlib:node:zlib"],
        // The package's own choice under the `browser` condition: build.ts configures nothing for it.
        hostMount: ["hostMount.browser.ts"]
      }
      assert.deepStrictEqual({ page: contents(page), worker: contents(worker) }, { page: expected, worker: expected })
    }))

  it.live("an agent runs Write, Read and Bash, and Anthropic's provider over fetch, on a Chromium page and in its Web Worker", () =>
    Effect.gen(function*() {
      const [page, worker] = yield* bundles
      const server = yield* Loopback.start([
        Loopback.sse(Loopback.fixture("anthropic-tools.sse")),
        Loopback.sse(Loopback.fixture("anthropic-final.sse")),
        Loopback.sse(Loopback.fixture("anthropic-tools.sse")),
        Loopback.sse(Loopback.fixture("anthropic-final.sse"))
      ])
      const { errors, tab } = yield* openPage(server.url, page, worker)
      const reports = { page: yield* inPage(tab, server.url), worker: yield* inWorker(tab, server.url) }
      assert.deepStrictEqual<unknown>(reports, {
        page: { place: "Window", scripted, overFetch, leftOut },
        worker: { place: "DedicatedWorkerGlobalScope", scripted, overFetch, leftOut }
      })
      // What the server received: the page's two requests, then the worker's, same-origin, keyed.
      const request = (messages: number) => ({
        method: "POST",
        path: "/v1/messages",
        origin: server.url,
        apiKey: API_KEY,
        model: "claude-sonnet-4-6",
        stream: true,
        messages
      })
      assert.deepStrictEqual(
        server.requests.map(({ body, headers, method, path }) => ({
          method,
          path,
          origin: headers.origin,
          apiKey: headers["x-api-key"],
          model: body.model,
          stream: body.stream,
          messages: body.messages.length
        })),
        [request(1), request(3), request(1), request(3)]
      )
      assert.deepStrictEqual(errors, [])
    }).pipe(Effect.scoped))
})
