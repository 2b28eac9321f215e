/**
 * A confined LocalSandbox's file methods follow its commands' rules (issue 37, ADR 0076): what a
 * confined command cannot read (`denyRead`, the `.env` files above the cwd, the host's `/tmp`,
 * `/proc`) the file methods refuse, through a link too, and Glob, Grep and list skip; what it
 * cannot write (outside the writable roots) Write and Edit refuse. Each case runs the command beside
 * the file method, on real bubblewrap (scripts/setup-bubblewrap.sh, as Confine.test.ts).
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Result } from "effect"
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { TestModel } from "@condukt/testing"
import * as Agent from "@condukt/core/Agent"
import type * as Message from "@condukt/core/Message"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import type * as Sandbox from "@condukt/core/Sandbox"
import * as Session from "@condukt/core/Session"
import * as Tools from "@condukt/core/Tools"
import * as Condukt from "../../src/Condukt.ts"
import * as ConfinedPaths from "../../src/sandbox/ConfinedPaths.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import * as Skip from "@condukt/testing/Skip"
import * as Bubblewrap from "./bubblewrap.ts"

const host = Layer.merge(NodeServices.layer, ProcessBudget.layer())

const unavailable = ((): string | undefined => {
  const why = Bubblewrap.missing()
  if (why !== undefined) process.stderr.write(`ConfinedFiles.test: bubblewrap unavailable, skipped: ${why}\n`)
  return why
})()

/**
 * A fake home holding a key, a `.netrc`, a folder of secrets, a project (the sandbox's cwd) and a
 * directory beside it.
 * Under the real home directory, not /tmp: the confined commands' private /tmp would hide it all
 * anyway, and the point is that `denyRead` hides the key (the real ~/.ssh is never touched).
 */
const layout = Effect.acquireRelease(
  Effect.sync(() => {
    const home = realpathSync(mkdtempSync(join(homedir(), ".condukt-confined-files-")))
    const project = join(home, "project")
    const outside = join(home, "outside")
    for (const dir of [join(project, "src"), outside, join(home, ".ssh"), join(home, "secrets")]) mkdirSync(dir, { recursive: true })
    writeFileSync(join(home, ".ssh/id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY----- planted\n")
    writeFileSync(join(home, ".netrc"), "machine example.com password planted\n")
    writeFileSync(join(home, "secrets/token.txt"), "planted token\n")
    writeFileSync(join(home, "notes.txt"), "planted in plain sight\n")
    writeFileSync(join(outside, "readme.txt"), "outside, readable\n")
    writeFileSync(join(project, "src/main.ts"), "export const planted = 1\n")
    return { home, project, outside, key: join(home, ".ssh/id_rsa"), netrc: join(home, ".netrc") }
  }),
  ({ home }) => Effect.sync(() => rmSync(home, { recursive: true, force: true }))
)

type Layout = Effect.Success<typeof layout>

const confinedAt = (at: Layout, options: Omit<LocalSandbox.Options, "cwd" | "confine"> = {}) =>
  LocalSandbox.make({ cwd: at.project, ...options, confine: { denyRead: [join(at.home, ".ssh"), at.netrc, join(at.home, "secrets")] } })

const run = (sandbox: Sandbox.Service, command: string) => Effect.map(sandbox.exec(command), (r) => ({ exitCode: r.exitCode, output: r.output.trim() }))

/** The failure of `effect`, as the model would read it, with its reason's tag. */
const refusal = <A>(effect: Effect.Effect<A, Sandbox.SandboxError>) =>
  Effect.map(Effect.flip(effect), (error) => ({ reason: error.reason._tag, message: error.message }))

const denied = (path: string, real?: string) => ({
  reason: "OutsideAllowedPaths",
  message: `Path ${path}${real === undefined ? "" : ` (real path ${real})`} is denied by the sandbox's confinement (denyRead): its commands cannot read it either`
})

const readOnly = (path: string, writable: ReadonlyArray<string>, real?: string) => ({
  reason: "OutsideAllowedPaths",
  message: `Path ${path}${real === undefined ? "" : ` (real path ${real})`} is outside the writable paths of the sandbox's confinement (${
    writable.join(", ")
  }): its commands cannot write there either`
})

const inTmp = (path: string) => ({
  reason: "OutsideAllowedPaths",
  message:
    `Path ${path} is in the host's /tmp, which the sandbox's confinement hides (its commands get a private /tmp): keep the files you need under the working directory`
})

describe("a confined LocalSandbox's file methods", Skip.when(unavailable), () => {
  it.effect("refuse a denyRead path wherever they meet it, as the command cannot read it", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const open = yield* LocalSandbox.make({ cwd: at.project })
      const sandbox = yield* confinedAt(at)
      // Unconfined, all of it is there.
      assert.include(yield* open.read(at.key), "planted")
      assert.notInclude((yield* run(sandbox, `cat ${at.key} ${at.netrc}`)).output, "planted")
      assert.deepStrictEqual(yield* refusal(sandbox.read(at.key)), denied(at.key))
      assert.deepStrictEqual(yield* refusal(sandbox.read(at.netrc)), denied(at.netrc))
      assert.deepStrictEqual(yield* refusal(sandbox.read("../.ssh/id_rsa")), denied(at.key))
      assert.deepStrictEqual(yield* refusal(sandbox.stat(at.key)), denied(at.key))
      assert.deepStrictEqual(yield* refusal(sandbox.list(join(at.home, ".ssh"))), denied(join(at.home, ".ssh")))
      assert.deepStrictEqual(yield* refusal(sandbox.glob("*", { cwd: join(at.home, ".ssh") })), denied(join(at.home, ".ssh")))
      assert.deepStrictEqual(yield* refusal(sandbox.grep("planted", { path: join(at.home, ".ssh") })), denied(join(at.home, ".ssh")))
      assert.deepStrictEqual(yield* refusal(sandbox.grep("planted", { path: at.key })), denied(at.key))
      assert.deepStrictEqual(yield* refusal(sandbox.edit(at.key, "planted", "replaced")), denied(at.key))
      assert.strictEqual(readFileSync(at.key, "utf8"), "-----BEGIN OPENSSH PRIVATE KEY----- planted\n")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("refuse a link inside the cwd that leads to the key, naming where it leads", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const sandbox = yield* confinedAt(at)
      symlinkSync(at.key, join(at.project, "key"))
      symlinkSync(join(at.home, ".ssh"), join(at.project, "ssh"))
      // The command, following the same link, finds nothing either.
      assert.notInclude((yield* run(sandbox, "cat key ssh/id_rsa")).output, "planted")
      assert.deepStrictEqual(yield* refusal(sandbox.read("key")), denied(join(at.project, "key"), at.key))
      assert.deepStrictEqual(yield* refusal(sandbox.read("ssh/id_rsa")), denied(join(at.project, "ssh/id_rsa"), at.key))
      assert.deepStrictEqual(yield* refusal(sandbox.writeFile("key", "overwritten")), denied(join(at.project, "key"), at.key))
      assert.deepStrictEqual(yield* refusal(sandbox.list("ssh")), denied(join(at.project, "ssh"), join(at.home, ".ssh")))
      assert.strictEqual(readFileSync(at.key, "utf8"), "-----BEGIN OPENSSH PRIVATE KEY----- planted\n")
      // A walk does not follow links, so the project's own search is untouched.
      assert.deepStrictEqual(yield* sandbox.glob("**/*"), ["src/main.ts"])
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("Glob, Grep and list skip the denied subtree under a folder they may read", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const sandbox = yield* confinedAt(at)
      assert.deepStrictEqual(yield* sandbox.glob("**/*", { cwd: at.home }), ["notes.txt", "outside/readme.txt", "project/src/main.ts"])
      assert.deepStrictEqual(yield* sandbox.glob(`${at.home}/**/*`), [`${at.home}/notes.txt`, `${at.home}/outside/readme.txt`, `${at.home}/project/src/main.ts`])
      assert.deepStrictEqual(yield* sandbox.grep("planted", { path: at.home, glob: "**/*" }), {
        matches: [
          { path: join(at.home, "notes.txt"), lineNumber: 1, line: "planted in plain sight" },
          { path: "src/main.ts", lineNumber: 1, line: "export const planted = 1" }
        ],
        skipped: []
      })
      assert.deepStrictEqual([...yield* sandbox.list(at.home)].map((entry) => entry.name).sort(), ["notes.txt", "outside", "project"])
      assert.notInclude((yield* run(sandbox, `cat ${at.home}/secrets/token.txt`)).output, "planted")
      // Unconfined, the walks find the secrets (grep leaves dot entries out unless its glob names them).
      const open = yield* LocalSandbox.make({ cwd: at.project })
      assert.deepStrictEqual((yield* open.grep("planted", { path: at.home, glob: "**/*" })).matches.length, 3)
      assert.deepStrictEqual((yield* open.glob("**/*", { cwd: at.home })).length, 6)
      assert.deepStrictEqual(yield* sandbox.grep("planted", { path: at.home, glob: ".ssh/*" }), { matches: [], skipped: [] })
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("Write and Edit refuse what lies outside the writable roots, as the command's write fails", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const sandbox = yield* confinedAt(at)
      const target = join(at.outside, "new.txt")
      assert.match((yield* run(sandbox, `echo x > ${target}`)).output, /Read-only file system/)
      assert.deepStrictEqual(yield* refusal(sandbox.writeFile(target, "x")), readOnly(target, [at.project]))
      assert.deepStrictEqual(yield* refusal(sandbox.writeFile("../outside/new.txt", "x")), readOnly(target, [at.project]))
      assert.deepStrictEqual(yield* refusal(sandbox.writeFile(join(at.outside, "deep/er/new.txt"), "x")), readOnly(join(at.outside, "deep/er/new.txt"), [at.project]))
      symlinkSync(at.outside, join(at.project, "out"))
      assert.deepStrictEqual(yield* refusal(sandbox.writeFile("out/new.txt", "x")), readOnly(join(at.project, "out/new.txt"), [at.project], target))
      assert.deepStrictEqual(yield* refusal(sandbox.edit(join(at.outside, "readme.txt"), "readable", "changed")), readOnly(join(at.outside, "readme.txt"), [at.project]))
      assert.isFalse(existsSync(target))
      assert.isFalse(existsSync(join(at.outside, "deep")))
      assert.strictEqual(readFileSync(join(at.outside, "readme.txt"), "utf8"), "outside, readable\n")
      // What the command may read outside, the file methods read too; inside the cwd they write.
      assert.strictEqual(yield* sandbox.read(join(at.outside, "readme.txt")), "outside, readable\n")
      yield* sandbox.writeFile("src/new.ts", "ok")
      assert.deepStrictEqual(yield* run(sandbox, "cat src/new.ts"), { exitCode: 0, output: "ok" })
      // `writable` and `allowedPaths` are writable roots for both; a denied path under one stays denied.
      const wider = yield* LocalSandbox.make({ cwd: at.project, confine: { writable: [at.outside], denyRead: [join(at.home, ".ssh")] } })
      yield* wider.writeFile(target, "x")
      assert.deepStrictEqual(yield* run(wider, `cat ${target}`), { exitCode: 0, output: "x" })
      const allowed = yield* confinedAt(at, { allowedPaths: [".", at.home] })
      yield* allowed.writeFile(join(at.home, "by-tool.txt"), "tool\n")
      assert.deepStrictEqual(yield* run(allowed, `cat ${at.home}/by-tool.txt && echo cmd > ${at.home}/by-command.txt && echo ok`), { exitCode: 0, output: "tool\nok" })
      assert.deepStrictEqual(yield* refusal(allowed.read(at.key)), denied(at.key))
      assert.deepStrictEqual(yield* refusal(allowed.writeFile(at.key, "overwritten")), denied(at.key))
      assert.strictEqual(readFileSync(at.key, "utf8"), "-----BEGIN OPENSSH PRIVATE KEY----- planted\n")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("the host's /tmp, /proc and a .env above the cwd stay out of reach, as for the command", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const scratch = yield* Effect.acquireRelease(
        Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "condukt-confined-files-")))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      writeFileSync(join(scratch, "left.txt"), "planted in /tmp\n")
      writeFileSync(join(at.home, ".env"), "API_KEY=planted-above\n")
      const sandbox = yield* confinedAt(at)
      assert.notInclude((yield* run(sandbox, `cat ${scratch}/left.txt ../.env /proc/${process.pid}/environ`)).output, "planted")
      assert.deepStrictEqual(yield* refusal(sandbox.read(join(scratch, "left.txt"))), inTmp(join(scratch, "left.txt")))
      assert.deepStrictEqual(yield* refusal(sandbox.writeFile(join(scratch, "new.txt"), "x")), inTmp(join(scratch, "new.txt")))
      assert.isFalse(existsSync(join(scratch, "new.txt")))
      assert.deepStrictEqual(yield* refusal(sandbox.read("../.env")), {
        reason: "OutsideAllowedPaths",
        message: `Path ${join(at.home, ".env")} is denied by the sandbox's confinement (a .env file above the working directory): its commands cannot read it either`
      })
      assert.deepStrictEqual(yield* refusal(sandbox.read("/proc/self/environ")), {
        reason: "OutsideAllowedPaths",
        message: `Path /proc/self/environ (real path /proc/${process.pid}/environ) is not visible in the sandbox's confinement: its commands get their own /proc`
      })
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("a cwd under /tmp: its files are read and written; of /tmp, only the way to it is seen", () =>
    Effect.gen(function*() {
      const root = yield* Effect.acquireRelease(
        Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "condukt-confined-files-")))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      const project = join(root, "project")
      mkdirSync(project)
      writeFileSync(join(root, "beside.txt"), "beside\n")
      writeFileSync(join(project, "inside.txt"), "inside\n")
      const sandbox = yield* LocalSandbox.make({ cwd: project, confine: true })
      assert.strictEqual(yield* sandbox.read("inside.txt"), "inside\n")
      yield* sandbox.writeFile("made.txt", "made\n")
      assert.deepStrictEqual(yield* run(sandbox, `cat made.txt; ls ${root}`), { exitCode: 0, output: "made\nproject" })
      assert.deepStrictEqual(yield* sandbox.glob(`${root}/**/*`), [`${project}/inside.txt`, `${project}/made.txt`])
      assert.deepStrictEqual(yield* sandbox.list(root), [{ name: "project", type: "directory" }])
      assert.deepStrictEqual(yield* refusal(sandbox.read("../beside.txt")), inTmp(join(root, "beside.txt")))
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("what was opened is checked too: a descriptor on the key is refused whatever path led to it", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const fd = yield* Effect.acquireRelease(Effect.sync(() => openSync(at.key, "r")), (fd) => Effect.sync(() => closeSync(fd)))
      const rules = ConfinedPaths.make({
        prefix: ["--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", at.project, at.project],
        hidden: ["--tmpfs", join(at.home, ".ssh")],
        writable: [at.project]
      }, at.project)
      assert.isTrue(rules._tag === "Success")
      if (rules._tag !== "Success") return
      assert.strictEqual(
        ConfinedPaths.checkOpened(rules.success, fd, join(at.project, "innocent.txt"), "read")?.message,
        `Path ${join(at.project, "innocent.txt")} (real path ${at.key}) is denied by the sandbox's confinement (denyRead): its commands cannot read it either`
      )
    }).pipe(Effect.scoped))
})

describe("ConfinedPaths", () => {
  const read = (prefix: ReadonlyArray<string>, hidden: ReadonlyArray<string> = []) => ConfinedPaths.make({ prefix, hidden, writable: ["/w"] }, "/w")

  it("refuses to read mounts it does not know, so the sandbox's build fails rather than guess", () => {
    assert.deepStrictEqual(read(["--ro-bind", "/", "/", "--args", "3"]), Result.fail("unknown bwrap option --args"))
    assert.deepStrictEqual(read(["--ro-bind", "/", "/", "--bind", "/w"]), Result.fail("bwrap option --bind lacks its arguments"))
  })

  it("the last mount over a path decides it; a remount read-only takes the writes under it away", () => {
    const rules = read(["--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", "/w", "/w", "--ro-bind", "/w/docs", "/w/docs", "--bind", "/tmp/x", "/tmp/x", "--remount-ro", "/w/frozen"], ["--tmpfs", "/w/secret", "--ro-bind", "/dev/null", "/.env"])
    assert.isTrue(Result.isSuccess(rules))
    if (Result.isFailure(rules)) return
    const paths = rules.success
    const allowed = (path: string, access: ConfinedPaths.Access) => Result.isSuccess(ConfinedPaths.check(paths, path, path, access))
    assert.deepStrictEqual(
      ["/etc/hosts", "/w/a", "/w/docs/a", "/w/frozen/a", "/w/secret/a", "/.env", "/tmp", "/tmp/y", "/tmp/x/a"].map((path) => [
        path,
        allowed(path, "read"),
        allowed(path, "list"),
        allowed(path, "write")
      ]),
      [
        ["/etc/hosts", true, true, false],
        ["/w/a", true, true, true],
        ["/w/docs/a", true, true, false],
        ["/w/frozen/a", true, true, false],
        ["/w/secret/a", false, false, false],
        ["/.env", false, false, false],
        ["/tmp", false, true, false],
        ["/tmp/y", false, false, false],
        ["/tmp/x/a", true, true, true]
      ]
    )
    assert.deepStrictEqual(
      [["/", true], ["/w", true], ["/w/docs", true], ["/w/secret", true], ["/tmp", true], ["/tmp/x", true], ["/etc", true], ["/.env", false]].map(
        ([path, directory]) => ConfinedPaths.fence(paths, path as string, directory as boolean)
      ),
      ["some", "some", "all", "none", "some", "all", "all", "none"]
    )
    assert.strictEqual(
      ConfinedPaths.check(paths, "/.env", "/.env", "read").pipe(Result.match({ onFailure: (refused) => refused.message, onSuccess: String })),
      "Path /.env is denied by the sandbox's confinement (a .env file above the working directory): its commands cannot read it either"
    )
  })
})

const toolResults = (history: ReadonlyArray<Message.Message>) => history.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : []))

describe("a session on a confined LocalSandbox", Skip.when(unavailable), () => {
  it.live("neither Bash nor Read reads a denied key, and Write outside the cwd is refused (issue 37)", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const target = join(at.outside, "dropped.txt")
      const agent = Agent.make({ name: "coder", model: "test:x", tools: Tools.coding })
      const history = yield* Effect.gen(function*() {
        const session = yield* Session.start(agent, { sandbox: LocalSandbox.layer({ cwd: at.project, confine: { denyRead: [join(at.home, ".ssh")] } }) })
        yield* session.run("show me the key")
        return yield* session.history
      }).pipe(Effect.provide(TestModel.layer([
        TestModel.toolCall("Bash", { command: `cat ${at.key}` }),
        TestModel.toolCall("Read", { path: at.key }),
        TestModel.toolCall("Write", { path: target, content: "dropped" }),
        TestModel.text("I could not")
      ])))
      assert.deepStrictEqual(toolResults(history), [
        `cat: ${at.key}: No such file or directory\n\n(exit code: 1)`,
        `Error: Path ${at.key} is denied by the sandbox's confinement (denyRead): its commands cannot read it either`,
        `Error: Path ${target} is outside the writable paths of the sandbox's confinement (${at.project}): its commands cannot write there either`
      ])
      assert.isFalse(existsSync(target))
    }).pipe(Effect.scoped, Effect.provide(Condukt.layer)))
})
