/**
 * Crash at every step boundary (issue 25): a scripted 10-turn run with tool calls
 * (fixtures/crashRunner.ts) is played once whole, counting its boundaries (before and after each
 * model request, before and after each call's side effect, after each commit); then, for each
 * boundary N in turn, on a cluster of its own (one SQLite file), runner A kills itself with SIGKILL
 * at boundary N and runner B takes the session over once A's shard locks expired. The client's run
 * ends on B; the session's transcript, once the run it went on with is over, equals the
 * uninterrupted one but for the notices of calls cut off (a `retrySafe` call runs once more
 * instead); no model turn is requested again once committed; no call that is not `retrySafe` runs
 * twice. Each of these is predicted exactly from where boundary N falls in the uninterrupted run.
 * `CRASH_AT=3,17 vitest run <this file>` plays only the boundaries named.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Message from "@condukt/core/Message"
import * as Session from "@condukt/core/Session"
import * as Sessions from "@condukt/core/Sessions"
import * as SqliteClient from "@condukt/node/SqliteClient"
import * as Runner from "../src/Runner.ts"
import { TempDir } from "@condukt/testing"
import { storeWriter } from "../../node/test/sessionStore/processes.ts"

const tempDir = TempDir.make("condukt-store-")

const fixture = path.resolve(import.meta.dirname, "fixtures/crashRunner.ts")

/** Boundaries played at once, each on a cluster of its own. */
const CONCURRENCY = 6

/**
 * Boundaries, of the whole test, whose run `work` the session restarted in (started again on a
 * runner it had started on: its shard lock lapsed under load and came back). Such a lapse is counted
 * and reported, and allowed its own outcomes (a call cut off by that restart reads as interrupted, a
 * turn not committed yet is asked for again); past this many, or a boundary that strays from its
 * predictions without one, fails the test. A lapse once `work` is over (before `after`) is counted
 * and reported too, and its boundary checked as strictly as any.
 */
const MAX_LAPSES = 1

/** The lines of `file` in `dir` (none when it does not exist). */
const lines = (dir: string, file: string) => {
  const at = path.join(dir, file)
  return fs.existsSync(at) ? fs.readFileSync(at, "utf8").split("\n").filter((line) => line !== "") : []
}

interface Played {
  readonly reply: Exit.Exit<Sessions.RunReply, Sessions.SessionsError>
  readonly history: ReadonlyArray<Message.Message>
  /** Runner A's boundaries, in order. */
  readonly boundaries: ReadonlyArray<string>
  /** The model requests answered (`<runner> work <turn>`, `<runner> after 0`) and the commits (`<runner> commit <messages>`), in order. */
  readonly journal: ReadonlyArray<string>
  /** The calls run (their side effects), in order. */
  readonly ran: ReadonlyArray<string>
}

/**
 * A cluster on a SQLite file of its own: runner A, which kills itself at boundary `crashAt` (0:
 * never), and, when it does, runner B (loaded beside A, started once A is dead). The session `x`
 * runs `work`, then `after` (queued behind whatever run the session went on with).
 */
const play = (crashAt: number) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* tempDir
    const file = path.join(dir, "cluster.db")
    const a = yield* storeWriter([file, "a", dir, String(crashAt)], fixture)
    const b = crashAt > 0 ? yield* storeWriter([file, "b", dir, "0", "wait"], fixture) : undefined
    assert.strictEqual(yield* a.next, "loaded a")
    assert.match(yield* a.next, /^ready a /)
    if (b !== undefined) assert.strictEqual(yield* b.next, "loaded b")
    return yield* Effect.gen(function*() {
      const sessions = yield* Sessions.ById
      const id = yield* sessions.start("worker", { id: "x" })
      const working = yield* Effect.forkChild(Effect.exit(sessions.run(id, "work")))
      if (b !== undefined) {
        assert.match(yield* a.next, /^exited null/, `A at boundary ${crashAt}`)
        yield* b.send("go")
        assert.match(yield* b.next, /^ready b /)
      }
      const reply = yield* Fiber.join(working)
      // Those of the run (A, dead or not, is past them).
      const boundaries = lines(dir, "boundaries-a.log")
      assert.strictEqual((yield* sessions.run(id, "after")).text, "after done")
      const history = yield* sessions.history(id)
      return { reply, history, boundaries, journal: lines(dir, "journal.log"), ran: lines(dir, "ran.log") }
    }).pipe(
      Effect.tapCause(() => Effect.logError(`boundary ${crashAt} failed; journal: ${lines(dir, "journal.log").join(", ")}`)),
      Effect.provide(Runner.layerClient().pipe(Layer.provide(SqliteClient.layer({ file }))))
    )
  }))

/** The turns of the run `work`, as its requests name them (`0` to `9`). */
const turnsOf = (played: Played) => played.journal.flatMap((line) => (/^a work \d+$/.test(line) ? [line.split(" ")[2]!] : []))

/**
 * The requests of `played` made for a turn already committed: a line `work <turn>` after a commit
 * of at least as many messages as the history of `whole` holds up to that turn's reply.
 */
const askedAfterCommit = (whole: Played, played: Played) => {
  const start = whole.history.findIndex((message) => message._tag === "UserMessage" && message.content === "work")
  const replies = whole.history.flatMap((message, index) => (index > start && message._tag === "AssistantMessage" ? [index] : []))
  let saved = 0
  return played.journal.flatMap((line) => {
    const [runner, what, value] = line.split(" ")
    if (what === "commit") saved = Math.max(saved, Number(value))
    return what === "work" && saved > replies[Number(value)]! ? [`${runner} asked for turn ${value} after its commit (${saved} messages saved)`] : []
  })
}

/** Whether call `id` is of `note`, the tool that is not `retrySafe`. */
const isNote = (whole: Played, id: string) => whole.history.some((message) => message._tag === "ToolResultMessage" && message.callId === id && message.name === "note")

/** Whether `message` is the result `expected` of a `note` call, read as interrupted instead. */
const cutOffAgain = (message: Message.Message, expected: Message.Message | undefined) =>
  message._tag === "ToolResultMessage" && expected?._tag === "ToolResultMessage" && message.callId === expected.callId &&
  message.name === "note" && message.content === Session.INTERRUPTED_RESULT && message.isError

/**
 * Where, in `journal`, the session started again on a runner it had started on (its shard lock
 * lapsed and came back), and whether that was within the run `work` (a request or a commit of it
 * follows), not after it; undefined when it never did.
 */
const lapseOf = (journal: ReadonlyArray<string>) => {
  const at = journal.findIndex((line, i) => line.endsWith(" session") && journal.indexOf(line) < i)
  if (at === -1) return undefined
  const after = journal.findIndex((line) => line.endsWith(" after 0"))
  return { at, inRun: journal.slice(at, after === -1 ? undefined : after).some((line) => / (work|commit) \d+$/.test(line)) }
}

/** How many times `item` is in `list`. */
const count = (list: ReadonlyArray<string>, item: string) => list.filter((x) => x === item).length

/**
 * What a crash at boundary `n` (1-based) of the uninterrupted run `whole` must leave, predicted
 * from where `n` falls: the transcript, how many times each turn was requested and each call ran.
 */
const predicted = (whole: Played, n: number) => {
  const at = (label: string) => whole.boundaries.indexOf(label)
  /** Whether what happens right after boundary `index` (0-based) happened before the kill: boundaries 0…n-1 did. */
  const before = (index: number) => index !== -1 && index < n - 1
  const done = (index: number) => index !== -1 && index <= n - 1
  const commitAfter = (index: number) => whole.boundaries.findIndex((label, i) => i > index && label.startsWith("commit "))
  const commitBefore = (index: number) => whole.boundaries.findLastIndex((label, i) => i < index && label.startsWith("commit "))
  const calls = whole.history.flatMap((message) => (message._tag === "ToolResultMessage" ? [message] : []))
  /** A call whose start was committed, and not its result: it was cut off. */
  const cutOff = new Set(calls.flatMap((result) =>
    done(commitBefore(at(`call ${result.callId}`))) && !done(commitAfter(at(`ran ${result.callId}`))) ? [result.callId] : []
  ))
  const interrupted = (result: Message.ToolResultMessage) => cutOff.has(result.callId) && result.name === "note"
  const history = whole.history.map((message): Message.Message =>
    message._tag === "ToolResultMessage" && interrupted(message) ? { ...message, content: Session.INTERRUPTED_RESULT, isError: true } : message
  )
  const requests = new Map(turnsOf(whole).map((turn) => {
    // Asked of A (its request began), and not committed by A: asked again of B.
    const asked = before(at(`request ${turn}`))
    return [turn, asked && !done(commitAfter(at(`requested ${turn}`))) ? 2 : 1]
  }))
  const ran = new Map(calls.map((result) => {
    const onA = before(at(`call ${result.callId}`)) ? 1 : 0
    const onB = done(commitAfter(at(`ran ${result.callId}`))) || interrupted(result) ? 0 : 1
    return [result.callId, onA + onB]
  }))
  return { history, requests, ran, committed: done(commitAfter(at("requested 0"))) }
}

describe("ClusterSessions, a runner killed at every step boundary of a 10-turn run", () => {
  it.live("the resumed transcript equals the uninterrupted one but for interrupted calls; no committed turn asked again; no call run twice unless retrySafe", () =>
    Effect.gen(function*() {
      const whole = yield* play(0)
      assert.isTrue(Exit.isSuccess(whole.reply))
      assert.strictEqual(whole.history.filter((message) => message._tag === "AssistantMessage").length, 11)
      assert.isAtLeast(whole.boundaries.length, 50)
      const only = process.env["CRASH_AT"]?.split(",").map(Number)
      const results = yield* Effect.forEach(only ?? whole.boundaries.map((_, i) => i + 1), (n) => Effect.map(play(n), (played) => [n, played] as const), {
        concurrency: CONCURRENCY
      })
      const failures: Array<string> = []
      const lapses: Array<string> = []
      const lapsesAfter: Array<string> = []
      const expect = (at: string, what: string, actual: unknown, expected: unknown) => {
        if (JSON.stringify(actual) !== JSON.stringify(expected)) failures.push(`${at}: ${what}: ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`)
      }
      for (const [n, played] of results) {
        const at = `killed at boundary ${n} (${whole.boundaries[n - 1]})`
        const expected = predicted(whole, n)
        // A went the same way as the uninterrupted run, up to its death.
        expect(at, "A's boundaries", played.boundaries, whole.boundaries.slice(0, n))
        // The session started again on a runner: its shard lock lapsed under load and came back. Each
        // lapse is counted and reported; only one within the run (at most MAX_LAPSES) lets a call cut
        // off by that restart read as interrupted or run once less, or a turn not committed yet be asked again.
        const lapse = lapseOf(played.journal)
        const lapsed = lapse?.inRun === true
        if (lapse !== undefined) (lapsed ? lapses : lapsesAfter).push(`${at}: ${played.journal.join(", ")}`)
        expect(at, "history", lapsed ? played.history.map((message, i) => (cutOffAgain(message, expected.history[i]) ? expected.history[i] : message)) : played.history, expected.history)
        // No turn asked for once committed; every turn asked for; each as often as predicted but after a lapse.
        failures.push(...askedAfterCommit(whole, played).map((failure) => `${at}: ${failure}`))
        const asked = [...expected.requests.keys()].map((turn) => [turn, count(played.journal.map((line) => line.slice(2)), `work ${turn}`)] as const)
        expect(at, "turns never asked for", asked.filter(([, times]) => times === 0), [])
        if (!lapsed) expect(at, "turns asked other than predicted", asked.filter(([turn, times]) => times !== expected.requests.get(turn)), [])
        // A call that is not retrySafe runs as predicted (at most once); a retrySafe one at least as often.
        const ran = [...expected.ran].map(([id, times]) => [id, count(played.ran, id), times] as const)
        expect(at, "calls run twice", ran.filter(([id, times]) => isNote(whole, id) && times > 1), [])
        expect(at, "calls run fewer times than predicted", ran.filter(([id, times, predicted]) => times < predicted && !(lapsed && isNote(whole, id))), [])
        expect(at, "calls not retrySafe run other than predicted", ran.filter(([id, times, predicted]) => isNote(whole, id) && times !== predicted && !lapsed), [])
        // The client's run ends on B with the uninterrupted reply but for the interrupted notices (ADR 0072).
        if (Exit.isSuccess(played.reply)) expect(at, "reply", played.reply.value, { ...Exit.getSuccess(whole.reply).pipe(Option.getOrThrow), messages: expected.history.slice(1, -2) })
        else failures.push(`${at}: the run failed: ${played.reply.cause}`)
      }
      // Reported whatever the outcome: how many boundaries lapsed, and each with its journal.
      const report = [
        `${results.length} boundaries played; a shard lock lapsed within the run at ${lapses.length} (at most ${MAX_LAPSES}), after it at ${lapsesAfter.length}`,
        ...lapses.map((line) => `within the run, ${line}`),
        ...lapsesAfter.map((line) => `after the run, ${line}`)
      ]
      yield* Effect.log(report.join("\n"))
      if (lapses.length > MAX_LAPSES) failures.push(report.join("\n"))
      assert.deepStrictEqual(failures, [], failures.join("\n"))
    }), 600_000)
})
