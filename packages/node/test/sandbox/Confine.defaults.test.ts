/**
 * Confinement's defaults (issue 44, item 1): `confine: true` with no `denyRead` hides the
 * credentials a home directory usually holds (`Confine.DEFAULT_DENY_READ`, its `~/` read as the home
 * directory) from the commands and the file methods alike. Every other confinement test passes a
 * `denyRead` of its own, so only these would notice the defaults gone.
 *
 * The home is a temporary one (`HOME` for the sandbox's build, as `os.homedir()` and the commands'
 * environment read it), under the real home directory, not `/tmp`: the confined commands' private
 * `/tmp` would hide it all anyway. The credentials planted there are named here, not read off the
 * default list, so a name dropped from the list shows too. Real bubblewrap
 * (scripts/setup-bubblewrap.sh, as Confine.test.ts).
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { dirname, join } from "node:path"
import { TestModel } from "@condukt/testing"
import * as Agent from "@condukt/core/Agent"
import type * as Message from "@condukt/core/Message"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import type * as Sandbox from "@condukt/core/Sandbox"
import * as Session from "@condukt/core/Session"
import * as Tools from "@condukt/core/Tools"
import * as Condukt from "../../src/Condukt.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import * as Skip from "@condukt/testing/Skip"
import * as Bubblewrap from "./bubblewrap.ts"

const host = Layer.merge(NodeServices.layer, ProcessBudget.layer())

const unavailable = ((): string | undefined => {
  const why = Bubblewrap.missing()
  if (why !== undefined) process.stderr.write(`Confine.defaults.test: bubblewrap unavailable, skipped: ${why}\n`)
  return why
})()

/** One credential under each path the defaults name: the keys, tokens and passwords a home holds. */
const CREDENTIALS = [
  ".ssh/id_rsa",
  ".aws/credentials",
  ".azure/msal_token_cache.json",
  ".config/gcloud/application_default_credentials.json",
  ".config/gh/hosts.yml",
  ".docker/config.json",
  ".gnupg/private-keys-v1.d/planted.key",
  ".kube/config",
  ".netrc",
  ".npmrc",
  ".pgpass"
] as const

const planted = (name: string) => `planted ${name}\n`

/**
 * A temporary home holding every credential, a file the defaults leave alone (`notes.txt`), a
 * folder only a given `denyRead` names (`private`), and the project (the sandbox's cwd); `HOME`
 * points at it until the scope closes.
 */
const home = Effect.acquireRelease(
  Effect.sync(() => {
    const root = realpathSync(mkdtempSync(join(homedir(), ".condukt-confine-defaults-")))
    const project = join(root, "project")
    for (const name of [...CREDENTIALS, "notes.txt", "private/token.txt", "project/main.ts"]) {
      mkdirSync(dirname(join(root, name)), { recursive: true })
      writeFileSync(join(root, name), planted(name))
    }
    const previous = process.env.HOME
    process.env.HOME = root
    return { root, project, previous }
  }),
  ({ previous, root }) =>
    Effect.sync(() => {
      if (previous === undefined) delete process.env.HOME
      else process.env.HOME = previous
      rmSync(root, { recursive: true, force: true })
    })
)

const run = (sandbox: Sandbox.Service, command: string) => Effect.map(sandbox.exec(command), (r) => ({ exitCode: r.exitCode, output: r.output.trim() }))

/**
 * What a command finds at `~/<name>`: its text, or `unreadable` when it cannot read it — a hidden
 * directory shows empty (no such file); a hidden file, bound over by `/dev/null`, reads empty, or is
 * refused where the mount cannot hold a device (a user namespace: permission denied).
 */
const catHome = (sandbox: Sandbox.Service, root: string, name: string) =>
  Effect.map(run(sandbox, `cat ~/${name} 2>&1`), ({ output }) =>
    output === "" || output === `cat: ${root}/${name}: No such file or directory` ||
      output === `cat: ${root}/${name}: Permission denied`
      ? "unreadable"
      : output)

/** The failure of `effect`, as the model would read it, with its reason's tag. */
const refusal = <A>(effect: Effect.Effect<A, Sandbox.SandboxError>) =>
  Effect.map(Effect.flip(effect), (error) => ({ reason: error.reason._tag, message: error.message }))

const denied = (path: string) => ({
  reason: "OutsideAllowedPaths",
  message: `Path ${path} is denied by the sandbox's confinement (denyRead): its commands cannot read it either`
})

const toolResults = (history: ReadonlyArray<Message.Message>) => history.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))

describe("confine: true, with no denyRead", Skip.when(unavailable), () => {
  it.effect("hides every credential the home holds from the commands (through ~/) and the file methods, and nothing else of the home", () =>
    Effect.gen(function*() {
      const at = yield* home
      const open = yield* LocalSandbox.make({ cwd: at.project })
      const confined = yield* LocalSandbox.make({ cwd: at.project, confine: true })
      // Unconfined, every one is there.
      assert.deepStrictEqual(yield* Effect.forEach(CREDENTIALS, (name) => catHome(open, at.root, name)), CREDENTIALS.map((name) => planted(name).trim()))
      assert.deepStrictEqual(yield* Effect.forEach(CREDENTIALS, (name) => catHome(confined, at.root, name)), CREDENTIALS.map(() => "unreadable"))
      assert.strictEqual(yield* catHome(confined, at.root, "notes.txt"), planted("notes.txt").trim())
      assert.deepStrictEqual(
        yield* Effect.forEach(CREDENTIALS, (name) => refusal(confined.read(join(at.root, name)))),
        CREDENTIALS.map((name) => denied(join(at.root, name)))
      )
      assert.strictEqual(yield* confined.read(join(at.root, "notes.txt")), planted("notes.txt"))
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.live("a session's Bash and Read tools read neither ~/.ssh/id_rsa nor ~/.aws/credentials", () =>
    Effect.gen(function*() {
      const at = yield* home
      const key = join(at.root, ".ssh/id_rsa")
      const aws = join(at.root, ".aws/credentials")
      const agent = Agent.make({ name: "coder", model: "test:x", tools: Tools.coding })
      const history = yield* Effect.gen(function*() {
        const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd: at.project, confine: true }) })
        yield* session.run("show me the keys")
        return yield* session.history
      }).pipe(Effect.provide(TestModel.layer([
        TestModel.toolCall("Bash", { command: "cat ~/.ssh/id_rsa; cat ~/.aws/credentials" }),
        TestModel.toolCall("Read", { path: key }),
        TestModel.toolCall("Read", { path: aws }),
        TestModel.text("I could not")
      ])))
      assert.deepStrictEqual(toolResults(history), [
        `cat: ${key}: No such file or directory\ncat: ${aws}: No such file or directory\n\n(exit code: 1)`,
        `Error: ${denied(key).message}`,
        `Error: ${denied(aws).message}`
      ])
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))
})

describe("confine with a denyRead of its own", Skip.when(unavailable), () => {
  it.effect("reads ~/ as the home directory, and replaces the defaults", () =>
    Effect.gen(function*() {
      const at = yield* home
      const token = join(at.root, "private/token.txt")
      const confined = yield* LocalSandbox.make({ cwd: at.project, confine: { denyRead: ["~/private"] } })
      assert.deepStrictEqual(yield* run(confined, "cat ~/private/token.txt; cat ~/.ssh/id_rsa"), {
        exitCode: 0,
        output: `cat: ${token}: No such file or directory\n${planted(".ssh/id_rsa").trim()}`
      })
      assert.deepStrictEqual(yield* refusal(confined.read(token)), denied(token))
      assert.strictEqual(yield* confined.read(join(at.root, ".ssh/id_rsa")), planted(".ssh/id_rsa"))
    }).pipe(Effect.scoped, Effect.provide(host)))
})
