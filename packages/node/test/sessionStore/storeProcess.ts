/**
 * What a store-holding child process does, for the tests of several processes on one store; the
 * entry scripts (test/fixtures/storeWriter.ts here, other packages' fixtures for their stores) pass
 * how to open their store and run one of these on the process's stdin and stdout.
 *
 * - `writer`: loads session `id` (it must exist), prints `ready`, waits for a line on stdin, then
 *   saves the session with one more turn (`name`, answered `name done`) appended, and prints one
 *   JSON line: `{"saved":true}`, or the store error's `{"reason":…,"message":…}`.
 * - `opener`: prints `ready`; for each line on stdin (a database file) opens a store on it, saves
 *   session `name` and closes the store, printing `ok` or the error's message; ends with stdin.
 */
import { Effect, Option, type Scope, Stream } from "effect"
import * as readline from "node:readline"
import * as Message from "@condukt/core/Message"
import type { SessionStoreError, Service } from "@condukt/core/SessionStore"
import * as Snapshot from "@condukt/core/Snapshot"

const lines = Stream.fromAsyncIterable(readline.createInterface({ input: process.stdin }), (cause) => cause)

const say = (line: string) => Effect.sync(() => void process.stdout.write(`${line}\n`))

const outcome = (error: SessionStoreError) => JSON.stringify({ reason: error.reason._tag, message: error.message })

export const writer = <E>(open: Effect.Effect<Service, E, Scope.Scope>, id: string, name: string) =>
  Effect.gen(function*() {
    const store = yield* open
    const loaded = Option.getOrThrow(yield* store.load(id))
    yield* say("ready")
    yield* Stream.runHead(lines)
    const turn = [Message.user(name), Message.assistant([Message.textPart(`${name} done`)])]
    const snapshot = { ...loaded, messages: [...loaded.messages, ...turn], updatedAt: loaded.updatedAt + 1 }
    yield* store.save(snapshot, { appended: turn.length }).pipe(
      Effect.matchEffect({ onFailure: (error) => say(outcome(error)), onSuccess: () => say(JSON.stringify({ saved: true })) })
    )
  })

export const opener = <E extends { readonly message: string }>(open: (file: string) => Effect.Effect<Service, E, Scope.Scope>, name: string) =>
  Effect.gen(function*() {
    yield* say("ready")
    yield* Stream.runForEach(lines, (file) =>
      Effect.scoped(Effect.gen(function*() {
        const store = yield* open(file)
        yield* store.save(Snapshot.make({ id: name, agent: "opener", model: "test:x", messages: [Message.user(name)], assigns: {}, createdAt: 0, updatedAt: 0 }))
      })).pipe(Effect.matchEffect({ onFailure: (error) => say(error.message), onSuccess: () => say("ok") })))
  })

/** Runs `program`, then exits 0 (stdin's reader would keep the process alive). */
export const main = <E>(program: Effect.Effect<void, E, Scope.Scope>) =>
  Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0))
