/**
 * Whole agent runs for provider tests: a real session on the Local sandbox, in a temporary
 * directory holding a.txt ("alpha") and b.txt ("beta"), its model served by a provider talking to
 * a loopback server. Each vendor's test asserts what its wire format sent and what came back;
 * this module only sets the run up and collects it, and knows no vendor.
 */
import { Effect, type Layer, Schema, Stream } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as LocalSandbox from "@condukt/node/sandbox/Local"
import * as Session from "@condukt/core/Session"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import * as Tool from "@condukt/core/Tool"
import * as Tools from "@condukt/core/Tools"
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

/** One session of `agent` in `cwd`, its model from `layer`, given to `use`; stopped after. */
const withSession = <R, A, E, R2>(
  agent: Agent.Agent<R>,
  layer: Layer.Layer<never>,
  cwd: string,
  use: (session: Session.Session) => Effect.Effect<A, E, R2>
) => Effect.scoped(Effect.flatMap(Session.start(agent, { sandbox: LocalSandbox.layer({ cwd }) }), use)).pipe(Effect.provide(layer))

/** Every event one session of `agent` in `cwd` streams for `prompt`, its model from `layer`. */
export const streamed = <R>(
  agent: Agent.Agent<R>,
  layer: Layer.Layer<never>,
  cwd: string,
  prompt: string,
  options?: Session.RunOptions
) => withSession(agent, layer, cwd, (session) => Stream.runCollect(session.stream(prompt, options)))

/** A provider's layer talking to a loopback server. */
type OnServer = (server: Loopback.Server) => Layer.Layer<never>
/** What the server answers, request by request. */
type Replies = ReadonlyArray<Loopback.Reply>

/** A server answering `replies`, and what `use` makes of the provider on it and of `files`. */
const onServer = <A, E, R>(provider: OnServer, replies: Replies, use: (layer: Layer.Layer<never>, cwd: string) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const cwd = yield* files
    const server = yield* Loopback.start(replies)
    return { server, out: yield* use(provider(server), cwd) }
  })

/** Runs `prompt` in `files` against a server answering `replies`: the server and every event. */
export const events = <R>(agent: Agent.Agent<R>, provider: OnServer, replies: Replies, prompt: string) =>
  Effect.map(onServer(provider, replies, (layer, cwd) => streamed(agent, layer, cwd, prompt)), ({ out, server }) => ({ server, events: out }))

/** Runs `prompt` in `files` against a server answering `replies`: the server and the run's result. */
export const run = <R>(agent: Agent.Agent<R>, provider: OnServer, replies: Replies, prompt: string, options?: Session.RunOptions) =>
  Effect.map(
    onServer(provider, replies, (layer, cwd) => withSession(agent, layer, cwd, (session) => session.run(prompt, options))),
    ({ out, server }) => ({ server, result: out })
  )

/** The text or thinking the events streamed, joined. */
export const joined = (events: ReadonlyArray<SessionEvent.SessionEvent>, tag: "TextDelta" | "ThinkingDelta"): string =>
  events.flatMap((e) => ((e._tag === "TextDelta" || e._tag === "ThinkingDelta") && e._tag === tag ? [e.text] : [])).join("")

/** The tool calls the events announced, as [call id, input]. */
export const toolCalls = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((e) => (e._tag === "ToolCall" ? [[e.callId, e.input] as const] : []))

/** Each turn's token counts, as [input, output, cache read]. */
export const turnTokens = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((e) => (e._tag === "TurnEnd" ? [[e.usage.inputTokens, e.usage.outputTokens, e.usage.cacheReadTokens] as const] : []))
