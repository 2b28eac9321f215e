/**
 * One agent, two sandboxes: swapping Local and Virtual is one option at start or one Layer around
 * the program; sessions never share a virtual filesystem; a session's sandbox goes with it.
 */
import { Agent, type Message, Secret, Session, Tools } from "@condukt/core"
import { Condukt, LocalSandbox } from "@condukt/node"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { TempDir, TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

const agent = Agent.make({ name: "pwd", model: "test:x", tools: Tools.coding })

const toolResults = (history: ReadonlyArray<Message.Message>) =>
  history.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))

/** Runs `pwd; ls` through the Bash tool in a fresh session and returns what the tool saw. */
const look = <RIn = never>(options: Session.StartOptions<RIn> = {}) =>
  Effect.gen(function*() {
    const session = yield* Session.start(agent, options)
    yield* session.run("where am I?")
    return toolResults(yield* session.history)
  }).pipe(
    Effect.scoped,
    Effect.provide(TestModel.layer([TestModel.toolCall("Bash", { command: "pwd; ls" }), TestModel.text("here")]))
  )

const tempDir = TempDir.make("condukt-swap-")

describe("sessions on Local and Virtual sandboxes", () => {
  it.live("the same agent runs on either, chosen by one option at start", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      fs.writeFileSync(path.join(dir, "host.txt"), "")
      assert.deepStrictEqual(yield* look({ sandbox: LocalSandbox.layer({ cwd: dir }) }).pipe(Effect.provide(Condukt.layer)), [`${dir}\nhost.txt\n`])
      assert.deepStrictEqual(
        yield* look({ sandbox: VirtualSandbox.layer({ files: { "virtual.txt": "" } }) }),
        ["/home/user\nvirtual.txt\n"]
      )
    }))

  it.live("or by one Layer around the program, as a test would", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* look(), ["/work\nnotes.md\n"])
    }).pipe(Effect.provide(VirtualSandbox.layer({ cwd: "/work", files: { "notes.md": "# hi\n" } }))))

  it.effect("two sessions of one agent never see each other's virtual files", () =>
    Effect.gen(function*() {
      const isolated = Agent.make({
        name: "writer",
        model: "test:x",
        tools: Tools.coding,
        sandbox: VirtualSandbox.layer()
      })
      const first = yield* Session.start(isolated)
      const second = yield* Session.start(isolated)
      yield* first.run("write")
      yield* second.run("look")
      assert.deepStrictEqual(toolResults(yield* first.history), ["Wrote secret.txt (1 lines, 6 bytes)"])
      assert.deepStrictEqual(toolResults(yield* second.history), ["Error: File not found: secret.txt"])
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.toolCall("Write", { path: "secret.txt", content: "mine!\n" }),
      TestModel.text("written"),
      TestModel.toolCall("Read", { path: "secret.txt" }),
      TestModel.text("not there")
    ]))))

  it.effect("a session's virtual sandbox is built by its first tool call and released when it stops", () =>
    Effect.gen(function*() {
      const events = yield* Ref.make<ReadonlyArray<string>>([])
      const tracked = Layer.merge(
        VirtualSandbox.layer(),
        Layer.effectDiscard(Effect.acquireRelease(
          Ref.update(events, (e) => [...e, "built"]),
          () => Ref.update(events, (e) => [...e, "released"])
        ))
      )
      const session = yield* Session.start(agent, { sandbox: tracked })
      assert.deepStrictEqual(yield* Ref.get(events), [])
      yield* session.run("list")
      assert.deepStrictEqual(yield* Ref.get(events), ["built"])
      yield* session.stop
      assert.deepStrictEqual(yield* Ref.get(events), ["built", "released"])
    }).pipe(Effect.provide(TestModel.layer([TestModel.toolCall("Bash", { command: "true" }), TestModel.text("done")]))))

  it.effect("a virtual sandbox's Bash gets the session's secrets as its environment; the model reads their names", () =>
    Effect.gen(function*() {
      const session = yield* Session.start(agent, {
        sandbox: VirtualSandbox.layer(),
        secrets: { API_TOKEN: Secret.static("virtual-s3cret") }
      })
      yield* session.run("check the token")
      assert.deepStrictEqual(toolResults(yield* session.history), ["ok [REDACTED:API_TOKEN]\n"])
    }).pipe(Effect.provide(TestModel.layer([
      TestModel.toolCall("Bash", { command: 'test "$API_TOKEN" = virtual-s3cret && echo "ok $API_TOKEN"' }),
      TestModel.text("checked")
    ]))))

  it.live("a LocalSandbox whose cwd does not exist: the session's first tool call fails naming the directory", () =>
    Effect.gen(function*() {
      const dir = path.join(yield* tempDir, "missing")
      const error = yield* Effect.flip(look({ sandbox: LocalSandbox.layer({ cwd: dir }) }))
      assert.strictEqual(error._tag, "SessionError")
      assert.strictEqual(error.message, `Agent pwd: the sandbox could not be built: File not found: ${dir}`)
      assert.isFalse(fs.existsSync(dir))
    }).pipe(Effect.provide(Condukt.layer)))
})
