import { TempDir, TestModel } from "@condukt/testing"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Logger, Option, Queue, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Agent from "../src/Agent.ts"
import * as Compactor from "../src/Compactor.ts"
import * as Message from "../src/Message.ts"
import * as Model from "../src/Model.ts"
import * as Sandbox from "../src/Sandbox.ts"
import * as Secret from "../src/Secret.ts"
import * as Session from "../src/Session.ts"
import * as Sessions from "../src/Sessions.ts"
import * as DiskSessionStore from "@condukt/node/sessionStore/Disk"
import * as SqliteSessionStore from "@condukt/node/sessionStore/Sqlite"
import * as SessionStore from "../src/SessionStore.ts"
import * as Snapshot from "../src/Snapshot.ts"
import * as Tool from "../src/Tool.ts"
import { cutOff } from "./fixtures/cutOff.ts"
import { startProbe } from "./fixtures/startProbe.ts"

const tempDir = TempDir.make("condukt-store-")

const Echo = Tool.make("echo", {
  description: "Echoes",
  parameters: Schema.Struct({ text: Schema.String }),
  call: ({ text }) => Effect.succeed(Tool.assign(text, { echoed: text }))
})

const agent = Agent.make({ name: "echoer", model: "test:x", system: "Echo things.", tools: [Echo] })

/** A memory store that records every save, with how many messages it said were new. */
const recording = Effect.sync(() => {
  const store = SessionStore.makeMemory()
  const saves: Array<{ readonly messages: ReadonlyArray<Message.Message>; readonly appended: number | undefined; readonly batch?: Snapshot.Batch }> = []
  const service: SessionStore.Service = {
    ...store,
    save: (snapshot, options) => {
      saves.push({ messages: snapshot.messages, appended: options?.appended, ...(snapshot.batch === undefined ? {} : { batch: snapshot.batch }) })
      return store.save(snapshot, options)
    }
  }
  return { store: service, saves }
})

const echoTurn = (n: number) => [
  TestModel.toolCall("echo", { text: `t${n}` }, `c${n}`),
  TestModel.text(`done ${n}`)
]

const noSandbox = Sandbox.layerNoop()

/**
 * The agent, whose every session start ends with `started` on `probe` (offered from a fiber forked
 * while the sandbox is built, so once the start, registration included, has finished).
 */
/** An agent whose every session start is told on `probe`. */
const probed = (probe: Queue.Queue<string>) =>
  Agent.make({
    name: "echoer",
    model: "test:x",
    system: "Echo things.",
    tools: [Echo],
    mcpServers: [startProbe(probe)]
  })

const TOKEN = "tok-4f9a2c81e7"

/** A tool that keeps its note, and the session's token, in the assigns (the token as a key too). */
const Remember = Tool.make("remember", {
  description: "Remembers a note",
  parameters: Schema.Struct({ note: Schema.String }),
  call: ({ note }) => Effect.succeed(Tool.assign("kept", { [TOKEN]: { notes: [note] }, token: TOKEN }))
})

const keeper = Agent.make({
  name: "keeper",
  model: "test:x",
  system: "Keep notes.",
  tools: [Remember],
  secrets: { API_TOKEN: Secret.static(TOKEN) }
})

/** The files under `dir` whose bytes hold `needle`. */
const filesHolding = (dir: string, needle: string) =>
  fs.readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((name) => fs.statSync(path.join(dir, name)).isFile() && fs.readFileSync(path.join(dir, name)).includes(needle))

/** One run of `keeper` on `store`: the model echoes the token in its call and its reply. */
const keepSecret = (store: SessionStore.Service, dir: string) =>
  Effect.gen(function*() {
    const session = yield* Session.start(keeper, { id: "s1", store, sandbox: noSandbox })
    yield* session.run(`keep ${TOKEN}`)
    // The session keeps its own values; the store holds none of them.
    assert.deepStrictEqual(yield* session.assigns, { [TOKEN]: { notes: [`the token is ${TOKEN}`] }, token: TOKEN })
    const stored = Option.getOrThrow(yield* store.load("s1"))
    assert.deepStrictEqual(stored.assigns, { "[REDACTED:API_TOKEN]": { notes: ["the token is [REDACTED:API_TOKEN]"] }, token: "[REDACTED:API_TOKEN]" })
    assert.deepStrictEqual(stored.messages, [
      Message.user("keep [REDACTED:API_TOKEN]"),
      Message.assistant([Message.toolCallPart({ id: "c1", name: "remember", input: { note: "the token is [REDACTED:API_TOKEN]" } })]),
      Message.toolResult({ callId: "c1", name: "remember", content: "kept", isError: false }),
      Message.assistant([Message.textPart("noted [REDACTED:API_TOKEN]")])
    ])
    assert.deepStrictEqual(filesHolding(dir, TOKEN), [])
  }).pipe(Effect.provide(TestModel.layer([
    TestModel.toolCall("remember", { note: `the token is ${TOKEN}` }, "c1"),
    TestModel.text(`noted ${TOKEN}`)
  ])))

/** A logger keeping each message's text, and its layer. */
const capturedLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    lines.push(`${logLevel}: ${(Array.isArray(message) ? message : [message]).join(" ")}`)
  })
  return { lines, layer: Logger.layer([logger]) }
}

/**
 * A store holding a message of three echo calls whose process died while c2 ran (c1 had finished,
 * c3 had not started): the session resumed goes on with that run before the next one.
 */
const resumeCutOff = (echoer: Agent.Agent<never>, expect: "the machine running this call failed" | "retried") =>
  Effect.gen(function*() {
    const calls = [1, 2, 3].map((n) => Message.toolCallPart({ id: `c${n}`, name: "echo", input: { text: `t${n}` } }))
    const committed = [Message.user("go"), Message.assistant(calls)]
    const store = yield* cutOff({
      id: "s1",
      agent: "echoer",
      system: "Echo things.",
      prompt: "go",
      calls,
      batch: { waiting: [], results: [{ callId: "c1", content: "t1", isError: false }], started: ["c2"] }
    })
    const session = yield* Session.start(echoer, { id: "s1", store, projectInstructions: false })
    // Queued behind the run the session goes on with.
    assert.strictEqual((yield* session.run("next")).text, "next done")
    const c2 = expect === "retried"
      ? Message.toolResult({ callId: "c2", name: "echo", content: "t2", isError: false })
      : Message.toolResult({
        callId: "c2",
        name: "echo",
        content:
          "Interrupted: the machine running this call failed before the call finished, and the call was not run again. Whatever it did before the failure may or may not have taken effect: check before relying on it.",
        isError: true
      })
    const results = [
      Message.toolResult({ callId: "c1", name: "echo", content: "t1", isError: false }),
      c2,
      Message.toolResult({ callId: "c3", name: "echo", content: "t3", isError: false })
    ]
    const requests = yield* TestModel.TestModel.use((recorder) => recorder.requests)
    // The committed turn is not asked for again: the first request reads the message's results.
    assert.deepStrictEqual(requests.map((request) => request.messages), [
      [...committed, ...results],
      [...committed, ...results, Message.assistant([Message.textPart("go done")]), Message.user("next")]
    ])
    const saved = Option.getOrThrow(yield* store.load("s1"))
    assert.deepStrictEqual([saved.messages, saved.batch], [yield* session.history, undefined])
    assert.deepStrictEqual(yield* session.assigns, { echoed: "t3" })
  }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.text("go done"), TestModel.text("next done")]), noSandbox)))

describe("Session with a store", () => {
  it.live("a save another writer got to first is logged as a warning naming it; the session goes on, the other writer's turns stay", () => {
    const logs = capturedLogs()
    return Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "sessions.db")
      const store = yield* SqliteSessionStore.make({ file })
      const session = yield* Session.start(agent, { id: "s1", store, sandbox: noSandbox })
      yield* session.run("one")
      // Another process resumes s1 and saves a turn of its own.
      const other = yield* SqliteSessionStore.make({ file })
      const theirs = Option.getOrThrow(yield* other.load("s1"))
      const extended = { ...theirs, messages: [...theirs.messages, Message.user("theirs")] }
      yield* other.save(extended, { appended: 1 })
      assert.strictEqual((yield* session.run("two")).text, "done 2")
      const conflict =
        `Warn: Session s1: not saved: SessionStore.save: session s1 at ${file}#condukt_sessions/s1: another writer saved this session since it was last loaded or saved here (its row is at revision 4, 3 when last loaded or saved here); nothing was overwritten, start the session again to resume from what it saved`
      // The tool call's start, its result, the final reply: each save refused the same way.
      assert.deepStrictEqual(logs.lines, [conflict, conflict, conflict])
      assert.deepStrictEqual(yield* (yield* SqliteSessionStore.make({ file })).load("s1"), Option.some(extended))
    })).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([...echoTurn(1), ...echoTurn(2)]), logs.layer)))
  })

  it.live("assigns JSON cannot hold (a cycle) are not saved: a one-line warning naming the row, and the session goes on", () => {
    const logs = capturedLogs()
    const cycle: Record<string, unknown> = {}
    cycle["self"] = cycle
    const Loop = Tool.make("loop", {
      description: "Keeps a cycle",
      parameters: Schema.Struct({}),
      call: () => Effect.succeed(Tool.assign("kept", { cycle }))
    })
    return Effect.scoped(Effect.gen(function*() {
      const file = path.join(yield* tempDir, "sessions.db")
      const store = yield* SqliteSessionStore.make({ file })
      const looping = Agent.make({ name: "looping", model: "test:x", tools: [Loop] })
      const session = yield* Session.start(looping, { id: "s1", store, sandbox: noSandbox })
      assert.strictEqual((yield* session.run("go")).text, "done")
      const refused =
        `Warn: Session s1: not saved: SessionStore.save: session s1 at ${file}#condukt_sessions/s1: not a session snapshot (it cannot be written as JSON: Converting circular structure to JSON --> starting at object with constructor 'Object' --- property 'self' closes the circle)`
      assert.deepStrictEqual(logs.lines, [refused, refused])
      // The call's start was committed before the tool set the cycle; nothing after it was.
      const saved = Option.getOrThrow(yield* store.load("s1"))
      assert.deepStrictEqual([saved.messages.length, saved.assigns, saved.batch], [2, {}, {
        waiting: [],
        results: [],
        started: ["c1"],
        // Where the run stood: its first turn, its messages from the prompt's, the reply's tokens.
        run: { turn: 1, from: 1, usage: { inputTokens: 10, outputTokens: 5 }, finishReason: "tool-calls", retries: 0 }
      }])
    })).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.toolCall("loop", {}, "c1"), TestModel.text("done")]), logs.layer)))
  })

  it.effect("a store whose failure echoes a secret (a remote store quoting its credential) is logged with the secret redacted", () => {
    const logs = capturedLogs()
    const echoing: SessionStore.Service = {
      ...SessionStore.makeMemory(),
      save: (snapshot) =>
        Effect.fail(
          new SessionStore.SessionStoreError({
            method: "save",
            sessionId: snapshot.id,
            location: "postgres://db/sessions",
            reason: new SessionStore.Unavailable({ description: `password authentication failed for "${TOKEN}"` })
          })
        )
    }
    return Effect.gen(function*() {
      const session = yield* Session.start(keeper, { id: "s1", store: echoing, sandbox: noSandbox })
      assert.strictEqual((yield* session.run("go")).text, "done")
      assert.deepStrictEqual(logs.lines, [
        "Warn: Session s1: not saved: SessionStore.save: session s1 at postgres://db/sessions: password authentication failed for \"[REDACTED:API_TOKEN]\""
      ])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([TestModel.text("done")]), logs.layer)))
  })

  it.live("assigns holding a secret, and the model echoing it, reach the disk store redacted: no file holds the value", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      yield* keepSecret(yield* DiskSessionStore.make({ dir }), dir)
    })).pipe(Effect.provide(NodeServices.layer)))

  it.live("assigns holding a secret, and the model echoing it, reach the SQLite store redacted: no byte of the database holds the value", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      yield* keepSecret(yield* SqliteSessionStore.make({ file: path.join(dir, "sessions.db") }), dir)
    })))

  it.effect("saves each call's start before it runs and after each completed turn, appending; never a call without its results or its start; mid-run with a batch", () =>
    Effect.gen(function*() {
      const { saves, store } = yield* recording
      const session = yield* Session.start(agent, { id: "s1", store })
      yield* session.run("one")
      yield* session.run("two")
      assert.deepStrictEqual(saves.map((s) => [s.messages.length, s.appended, s.batch?.started]), [
        [2, undefined, ["c1"]],
        // Mid-run, the model's turn due: the batch stays, every call answered in the history.
        [3, 1, []],
        [4, 1, undefined],
        [6, 2, ["c2"]],
        [7, 1, []],
        [8, 1, undefined]
      ])
      for (const { batch, messages } of saves) {
        const last = messages.at(-1)!
        const calls = last._tag === "AssistantMessage" ? Message.toolCalls(last).map((call) => call.id) : []
        assert.deepStrictEqual(batch?.started ?? [], calls)
      }
      const saved = Option.getOrThrow(yield* store.load("s1"))
      assert.deepStrictEqual(saved.messages, yield* session.history)
      assert.deepStrictEqual(saved.assigns, { echoed: "t2" })
      assert.deepStrictEqual([saved.agent, saved.model, saved.system], ["echoer", "test:x", "Echo things."])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([...echoTurn(1), ...echoTurn(2)]), noSandbox))))

  it.effect("the starts of a message's calls that run together are one commit, whatever their number", () =>
    Effect.gen(function*() {
      const { saves, store } = yield* recording
      const session = yield* Session.start(agent, { id: "s1", store })
      yield* session.run("three at once")
      assert.deepStrictEqual(saves.map((s) => [s.messages.length, s.batch?.started, s.batch?.results.map((r) => r.callId)]), [
        [2, ["c1", "c2", "c3"], []],
        [5, [], []],
        [6, undefined, undefined]
      ])
    }).pipe(Effect.provide(Layer.mergeAll(
      TestModel.layer([
        TestModel.reply(...[1, 2, 3].map((n) => TestModel.toolCall("echo", { text: `t${n}` }, `c${n}`))),
        TestModel.text("done")
      ]),
      noSandbox
    ))))

  it.effect("a session resumed with calls cut off by a dead process goes on with that run: a started call reads that it was interrupted, a finished one keeps its result, one not started runs", () =>
    resumeCutOff(agent, "the machine running this call failed"))

  it.effect("a session resumed with calls cut off by a dead process runs a started call again when its tool is retrySafe", () =>
    resumeCutOff(Agent.make({ name: "echoer", model: "test:x", system: "Echo things.", tools: [{ ...Echo, retrySafe: true }] }), "retried"))

  it.effect("a start with a stored id resumes: history, assigns, and the next run continues the conversation", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      const first = yield* Session.start(agent, { id: "s1", store, assigns: { seed: 1 } })
      yield* first.run("one")
      const history = yield* first.history
      yield* first.stop
      const again = yield* Session.start(agent, { id: "s1", store, assigns: { ignored: true } })
      assert.deepStrictEqual(yield* again.history, history)
      assert.deepStrictEqual(yield* again.assigns, { seed: 1, echoed: "t1" })
      assert.strictEqual((yield* again.run("two")).text, "done 2")
      const requests = yield* TestModel.TestModel.use((recorder) => recorder.requests)
      assert.deepStrictEqual(requests[2]!.messages, [...history, Message.user("two")])
      assert.strictEqual(requests[2]!.system, "Echo things.")
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([...echoTurn(1), ...echoTurn(2)]), noSandbox))))

  it.effect("a session that stops, idle or mid-run, tells its store to release it after its last save; started again, it loads it first", () =>
    Effect.gen(function*() {
      const memory = SessionStore.makeMemory()
      const journal: Array<string> = []
      const store: SessionStore.Service = {
        ...memory,
        load: (id) => Effect.andThen(Effect.sync(() => journal.push(`load ${id}`)), memory.load(id)),
        save: (snapshot, options) => Effect.andThen(memory.save(snapshot, options), Effect.sync(() => journal.push(`save ${snapshot.id} ${snapshot.messages.length}`))),
        release: (id) => Effect.sync(() => journal.push(`release ${id}`))
      }
      const first = yield* Session.start(agent, { id: "s1", store })
      yield* first.run("one")
      yield* first.stop
      assert.deepStrictEqual(journal, ["load s1", "save s1 2", "save s1 3", "save s1 4", "release s1"])
      journal.length = 0
      // Stopped while a call runs: the save of its start comes before the release.
      const running = yield* Deferred.make<void>()
      const Block = Tool.make("block", {
        description: "Blocks",
        parameters: Schema.Struct({}),
        call: () => Effect.andThen(Deferred.succeed(running, undefined), Effect.never)
      })
      const blocking = Agent.make({ name: "echoer", model: "test:x", system: "Echo things.", tools: [Echo, Block] })
      const again = yield* Session.start(blocking, { id: "s1", store })
      yield* Effect.forkScoped(again.run("two"), { startImmediately: true })
      yield* Deferred.await(running)
      yield* again.stop
      assert.deepStrictEqual(journal, ["load s1", "save s1 6", "release s1"])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([...echoTurn(1), TestModel.toolCall("block", {}, "b1")]), noSandbox))))

  it.effect("a snapshot that cannot be read stops the start with the store's error; nothing overwrites it", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      const newer = { ...Snapshot.make({ id: "s1", agent: "echoer", model: "test:x", messages: [], assigns: {}, createdAt: 0, updatedAt: 0 }) }
      const refusing: SessionStore.Service = {
        ...store,
        load: (id) =>
          Effect.fail(
            new SessionStore.SessionStoreError({
              method: "load",
              sessionId: id,
              location: "/srv/sessions/s1.json",
              reason: new SessionStore.UnsupportedVersion({ version: 3, supported: 2 })
            })
          )
      }
      yield* store.save(newer)
      const error = yield* Effect.flip(Session.start(agent, { id: "s1", store: refusing }))
      assert.strictEqual(
        error.message,
        "SessionStore.load: session s1 at /srv/sessions/s1.json: snapshot version 3 is newer than this Condukt reads (2); upgrade to resume it"
      )
      assert.deepStrictEqual(yield* store.load("s1"), Option.some(newer))
      assert.strictEqual(yield* TestModel.TestModel.use((recorder) => recorder.remaining), 0)
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer([]), noSandbox))))

  it.effect("a store provided as a service is used when the start names none", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent, { id: "s1" })
      yield* session.run("one")
      const store = yield* SessionStore.SessionStore
      assert.deepStrictEqual(Option.map(yield* store.load("s1"), (s) => s.messages.length), Option.some(4))
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer(echoTurn(1)), noSandbox, SessionStore.layerMemory))))

  it.effect("under a permanent supervisor, a session that crashes mid-run comes back with every committed turn and goes on with that run", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      const sessions = yield* Sessions.make()
      const probe = yield* Queue.unbounded<string>()
      const first = yield* sessions.start(probed(probe), { id: "phoenix", restart: "permanent", store })
      assert.strictEqual(yield* Queue.take(probe), "started")
      yield* first.run("one")
      // The second run's tool turn completes and is saved; then the model adapter dies.
      const error = yield* Effect.flip(first.run("two"))
      assert.strictEqual(error.message, "Session phoenix crashed: the model adapter has a bug")
      assert.deepStrictEqual(yield* Queue.takeN(probe, 2), ["released", "started"])
      const reborn = Option.getOrThrow(yield* sessions.whereis("phoenix"))
      assert.notStrictEqual(reborn, first)
      // The second run goes on by itself (its model turn asked again: it was never answered); this one waits behind it.
      assert.strictEqual((yield* reborn.run("three")).text, "back")
      const history = yield* reborn.history
      assert.deepStrictEqual(history.map((m) => (m._tag === "AssistantMessage" ? m.parts.map((p) => (p._tag === "Text" ? p.text : p._tag)).join(" ") : m._tag)), [
        "UserMessage",
        "ToolCall",
        "ToolResultMessage",
        "done 1",
        "UserMessage",
        "ToolCall",
        "ToolResultMessage",
        "ToolCall",
        "ToolResultMessage",
        "back",
        "UserMessage",
        "ToolCall",
        "ToolResultMessage",
        "back"
      ])
      assert.deepStrictEqual([history[4], history[10]], [Message.user("two"), Message.user("three")])
      assert.deepStrictEqual(yield* reborn.assigns, { echoed: "t4" })
    }).pipe(Effect.provide(Layer.mergeAll(crashAfter(4), noSandbox))))

  it.effect("compaction runs after each run: the history shrinks, a Compacted event says by how much, the store has it", () =>
    Effect.gen(function*() {
      const { saves, store } = yield* recording
      const compactor = yield* Effect.provide(Compactor.Compactor, Compactor.layerSliding({ keep: 2 }))
      const session = yield* Session.start(agent, { id: "s1", store, compactor })
      const events = yield* Stream.runCollect(session.stream("one"))
      assert.deepStrictEqual(events.slice(-2).map((e) => e._tag), ["Compacted", "AgentEnd"])
      const compacted = events.at(-2)!
      assert.deepStrictEqual(compacted._tag === "Compacted" ? [compacted.before, compacted.after] : [], [4, 1])
      assert.deepStrictEqual(yield* session.history, [Message.assistant([Message.textPart("done 1")])])
      assert.deepStrictEqual(saves.map((s) => [s.messages.length, s.appended]), [[2, undefined], [3, 1], [4, 1], [1, undefined]])
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer(echoTurn(1)), noSandbox))))

  it.effect("session.compact compacts an idle session on demand and tells observers", () =>
    Effect.gen(function*() {
      const store = SessionStore.makeMemory()
      const session = yield* Session.start(agent, { id: "s1", store, projectInstructions: false })
      yield* session.run("one")
      // Without a compactor, compact does nothing.
      yield* session.compact
      assert.strictEqual((yield* session.history).length, 4)
      yield* session.stop
      const compactor = yield* Effect.provide(Compactor.Compactor, Compactor.layerPruneToolResults({ keepRecent: 0, maxBytes: 1 }))
      const pruning = yield* Session.start(agent, { id: "s1", store, compactor })
      const observed = yield* Queue.unbounded<string>()
      yield* Stream.runForEach(pruning.events, (event) => Queue.offer(observed, `${event._tag} ${event.runId}`)).pipe(
        Effect.forkScoped({ startImmediately: true })
      )
      yield* pruning.compact
      assert.strictEqual(yield* Queue.take(observed), "Compacted ")
      assert.deepStrictEqual((yield* pruning.history)[2], Message.toolResult({ callId: "c1", name: "echo", content: "<elided: 2 bytes>", isError: false }))
      assert.deepStrictEqual(Option.map(yield* store.load("s1"), (s) => s.messages[2]), Option.some((yield* pruning.history)[2]))
    }).pipe(Effect.provide(Layer.mergeAll(TestModel.layer(echoTurn(1)), noSandbox))))
})

/** Answers with a tool call or a text, by request number; request `dieAt` (1-based) dies instead. */
function crashAfter(dieAt: number) {
  let requests = 0
  return Layer.succeed(Model.Model, Model.Model.of({
    name: "test:crash-after",
    stream: () => {
      const n = ++requests
      if (n === dieAt) return Stream.die(new Error("the model adapter has a bug"))
      const parts: ReadonlyArray<Model.Part> = n % 2 === 1
        ? [{ _tag: "ToolCall", id: `c${n}`, name: "echo", input: { text: `t${(n + 1) / 2}` } }, { _tag: "Finish", reason: "tool-calls" }]
        : [{ _tag: "TextDelta", text: n > dieAt ? "back" : `done ${n / 2}` }, { _tag: "Finish", reason: "stop" }]
      return Stream.fromIterable(parts)
    }
  }))
}
