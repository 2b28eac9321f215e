/**
 * Whole agent runs for provider tests: a real session on the Local sandbox, in a temporary
 * directory holding a.txt ("alpha") and b.txt ("beta"), its model served by a provider talking to
 * a loopback server. Each vendor's test asserts what its wire format sent and what came back;
 * this module only sets the run up and collects it, and knows no vendor.
 */
import { Effect, type Layer, Schema, Stream } from "effect"
import * as Agent from "../../src/Agent.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import * as Session from "../../src/Session.ts"
import type * as SessionEvent from "../../src/SessionEvent.ts"
import * as Tool from "../../src/Tool.ts"
import * as Tools from "../../src/Tools.ts"
import * as Loopback from "./loopback.ts"

/** The files the runs work on. */
export const files = Loopback.tempFiles({ "a.txt": "alpha\n", "b.txt": "beta\n" })

/** The agent most runs drive: Read alone. */
export const reader = (model: string, system?: string) => Agent.make({ name: "reader", model, system, tools: [Tools.Read] })

/** A tool only code execution may call: programmatic tool calling's fixture. */
export const CountRows = Tool.make("count_rows", {
  description: "Counts the rows of a table",
  parameters: Schema.Struct({ table: Schema.String }),
  allowedCallers: ["code_execution"],
  resultType: "structured",
  call: ({ table }) => Effect.succeed(Tool.structured(`${table} has 3 rows`, { table, rows: 3 }))
})

/** The agent of the programmatic tool-calling runs. */
export const analyst = (model: string) => Agent.make({ name: "analyst", model, tools: [CountRows] })

/** Every event one session of `agent` in `cwd` streams for `prompt`, its model from `layer`. */
export const streamed = <R>(
  agent: Agent.Agent<R>,
  layer: Layer.Layer<never>,
  cwd: string,
  prompt: string,
  options?: Session.RunOptions
) =>
  Effect.scoped(Effect.gen(function*() {
    const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd }) })
    return yield* Stream.runCollect(session.stream(prompt, options))
  })).pipe(Effect.provide(layer))

/** Runs `prompt` in `files` against a server answering `replies`: the server and every event. */
export const events = <R>(
  agent: Agent.Agent<R>,
  provider: (server: Loopback.Server) => Layer.Layer<never>,
  replies: ReadonlyArray<Loopback.Reply>,
  prompt: string
) =>
  Effect.gen(function*() {
    const cwd = yield* files
    const server = yield* Loopback.start(replies)
    return { server, events: yield* streamed(agent, provider(server), cwd, prompt) }
  })

/** Runs `prompt` in `files` against a server answering `replies`: the server and the run's result. */
export const run = <R>(
  agent: Agent.Agent<R>,
  provider: (server: Loopback.Server) => Layer.Layer<never>,
  replies: ReadonlyArray<Loopback.Reply>,
  prompt: string
) =>
  Effect.gen(function*() {
    const cwd = yield* files
    const server = yield* Loopback.start(replies)
    const result = yield* Effect.scoped(Effect.gen(function*() {
      const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd }) })
      return yield* session.run(prompt)
    })).pipe(Effect.provide(provider(server)))
    return { server, result }
  })

/** The text or thinking the events streamed, joined. */
export const joined = (events: ReadonlyArray<SessionEvent.SessionEvent>, tag: "TextDelta" | "ThinkingDelta"): string =>
  events.flatMap((e) => ((e._tag === "TextDelta" || e._tag === "ThinkingDelta") && e._tag === tag ? [e.text] : [])).join("")
