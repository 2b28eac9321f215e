/**
 * The runs test/browser-core.test.ts makes in a headless Chromium page and in a Web Worker that
 * page starts: the same module is bundled into both entries (page.ts, worker.ts). It imports
 * only the packages that promise to run where no Node runs — @condukt/core, @condukt/sandbox-virtual,
 * @condukt/testing, @condukt/providers — and effect.
 *
 * `scripted`: an agent on TestModel calls Write, Read and Bash in a VirtualSandbox; the file is
 * read back from the sandbox after the run. `overFetch`: an agent whose model is Anthropic's
 * Messages API through the provider on Effect's `FetchHttpClient` (the browser's `fetch`), against
 * the loopback server whose URL the test gives, reading two files the sandbox starts with. Each
 * returns plain JSON (what the tools answered, the reply, the events without their random ids)
 * for the page or the worker to hand back to the test. `leftOut` shows what a browser does
 * without: just-bash's `gzip`, and host mounts.
 */
import { Agent, Sandbox, Session, type SessionEvent, Tools } from "@condukt/core"
import { Anthropic } from "@condukt/providers"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { TestModel } from "@condukt/testing"
import { Effect, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"

/** An event as the test compares it: its random session and run ids left out. */
export type Event = Omit<SessionEvent.SessionEvent, "sessionId" | "runId">

/** What one run did. */
export interface Run {
  /** Each tool result, as `Name: "content"` (the content as JSON). */
  readonly results: ReadonlyArray<string>
  readonly reply: string
  /** The file the run wrote, read back from the sandbox after it (`scripted` only). */
  readonly file?: string
  readonly events: ReadonlyArray<Event>
}

/**
 * What a browser leaves out (ADR 0094): just-bash's `gzip` (its `node:zlib` refused by the build)
 * while the rest of the script runs, and host directories, at start and at run time (the reasons'
 * tags).
 */
export interface LeftOut {
  readonly gzip: { readonly output: string; readonly exitCode: number }
  readonly mountAtStart: string
  readonly mountAtRunTime: string
}

/** Both runs and what is left out, as one place (the page, or the worker) found them. */
export interface Report {
  /** The global object's class: `Window` on a page, `DedicatedWorkerGlobalScope` in a worker. */
  readonly place: string
  readonly scripted: Run
  readonly overFetch: Run
  readonly leftOut: LeftOut
}

/** The API key the provider sends, which the test finds in the server's requests. */
export const API_KEY = "sk-ant-browser"

const script = [
  TestModel.toolCall("Write", { path: "notes/todo.txt", content: "water the plants\nfeed the cat\n" }, "call-write"),
  TestModel.toolCall("Read", { path: "notes/todo.txt" }, "call-read"),
  TestModel.toolCall("Bash", { command: "wc -l < notes/todo.txt; tr a-z A-Z < notes/todo.txt" }, "call-bash"),
  TestModel.text("Two things to do.")
]

const withoutIds = ({ runId: _runId, sessionId: _sessionId, ...event }: SessionEvent.SessionEvent): Event => event

const resultsOf = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((event) => event._tag === "ToolResult" ? [`${event.name}: ${JSON.stringify(event.content)}`] : [])

const replyOf = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((event) => event._tag === "TextDelta" ? [event.text] : []).join("")

// just-bash's defense in depth patches Node's module loader, which a browser does not have.
const sandboxOptions = { defenseInDepth: false } as const

/** Write, Read and Bash on TestModel in a fresh VirtualSandbox. */
export const scripted: Effect.Effect<Run, unknown> = Effect.gen(function*() {
  const sandbox = yield* VirtualSandbox.make(sandboxOptions)
  const agent = Agent.make({ name: "keeper", model: "test:scripted", tools: Tools.coding })
  const session = yield* Session.start(agent, { sandbox: Layer.succeed(Sandbox.Sandbox, sandbox) })
  const events = yield* Stream.runCollect(session.stream("What is on my list?"))
  const file = yield* sandbox.read("notes/todo.txt")
  return { results: resultsOf(events), reply: replyOf(events), file, events: events.map(withoutIds) }
}).pipe(Effect.scoped, Effect.provide(TestModel.layer(script)))

/** Read twice, on Anthropic's wire format over `fetch`, against the server at `baseUrl`. */
export const overFetch = (baseUrl: string): Effect.Effect<Run, unknown> =>
  Effect.gen(function*() {
    const agent = Agent.make({ name: "reader", model: "anthropic:claude-sonnet-4-6", tools: [Tools.Read] })
    const sandbox = VirtualSandbox.layer({ ...sandboxOptions, files: { "a.txt": "alpha\n", "b.txt": "beta\n" } })
    const session = yield* Session.start(agent, { sandbox })
    const events = yield* Stream.runCollect(session.stream("What do a.txt and b.txt say?"))
    return { results: resultsOf(events), reply: replyOf(events), events: events.map(withoutIds) }
  }).pipe(
    Effect.scoped,
    Effect.provide(Anthropic.layer({ apiKey: Redacted.make(API_KEY), baseUrl }).pipe(Layer.provide(FetchHttpClient.layer)))
  )

/** `gzip` in a script, and a host directory mounted at start and at run time. */
export const leftOut: Effect.Effect<LeftOut, unknown> = Effect.gen(function*() {
  const sandbox = yield* VirtualSandbox.make(sandboxOptions)
  const { exitCode, output } = yield* sandbox.exec("echo hi | gzip; echo still here")
  const mount = { hostPath: "/srv/data", path: "/mnt/data", mode: "read-only" } as const
  const atStart = yield* Effect.flip(VirtualSandbox.make({ ...sandboxOptions, mounts: [mount] }))
  const atRunTime = yield* Effect.flip(sandbox.mount(mount.hostPath, mount.path, mount.mode))
  return { gzip: { output, exitCode }, mountAtStart: atStart.reason._tag, mountAtRunTime: atRunTime.reason._tag }
}).pipe(Effect.scoped)

/** Both runs and `leftOut`, one after the other, as a promise of plain JSON. */
export const runBoth = (baseUrl: string): Promise<Report> =>
  Effect.runPromise(Effect.map(
    Effect.all({ scripted, overFetch: overFetch(baseUrl), leftOut }),
    (runs) => ({ place: globalThis.constructor.name, ...runs })
  ))
