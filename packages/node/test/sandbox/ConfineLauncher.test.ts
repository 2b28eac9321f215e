/**
 * LocalSandbox `confine`: the launcher's lifecycle (`Launcher`: one confined process per sandbox
 * that starts its commands). Processes are found by pid — the launcher's from its cgroup, a
 * command's by a marker in its command line — and a command is known to run by a file it creates.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, watch, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import type * as Sandbox from "@condukt/core/Sandbox"
import * as Cgroup from "../../src/sandbox/Cgroup.ts"
import * as Confine from "../../src/sandbox/Confine.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"

const host = Layer.merge(NodeServices.layer, ProcessBudget.layer())

/** Why the launcher cannot be tried here (no bubblewrap, no cgroup for its commands), or undefined. */
const unavailable = ((): string | undefined => {
  try {
    execFileSync("bash", [join(import.meta.dirname, "../../../../scripts/setup-bubblewrap.sh")], { stdio: ["ignore", "ignore", "pipe"] })
  } catch (error) {
    return String((error as { stderr?: unknown }).stderr ?? error).trim()
  }
  const place = Cgroup.find(undefined)
  const why = typeof place === "string" ? place : Cgroup.probe(place)
  if (why !== undefined) process.stderr.write(`ConfineLauncher.test: skipped: ${why}\n`)
  return why
})()

/** A project directory, and a cgroup of the test's own where the sandbox's groups are made. */
const setting = Effect.acquireRelease(
  Effect.sync(() => {
    const project = realpathSync(mkdtempSync(join(tmpdir(), "condukt-launcher-")))
    const place = Cgroup.find(undefined)
    if (typeof place === "string") throw new Error(place)
    const parent = join(place.directory, `condukt-launcher-test-${process.pid}-${Math.random().toString(36).slice(2)}`)
    mkdirSync(parent)
    if (place.version === 2) writeFileSync(join(parent, "cgroup.subtree_control"), "+pids")
    return { project, parent }
  }),
  ({ parent, project }) => Effect.andThen(Cgroup.remove(parent), Effect.sync(() => rmSync(project, { recursive: true, force: true })))
)

/** The launcher's processes (bwrap, its init, Node): the members of its cgroup. */
const launcherPids = (parent: string): ReadonlyArray<number> =>
  readdirSync(parent).filter((name) => name.endsWith("-launcher")).flatMap((name) =>
    readFileSync(join(parent, name, "cgroup.procs"), "utf8").split("\n").flatMap((line) => (line === "" ? [] : [Number(line)]))
  )

/** Whether process `pid` is gone (or a zombie waiting to be reaped: it runs nothing). */
const gone = (pid: number): boolean => {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true
  } catch {
    return true
  }
}

/** The processes whose command line holds `marker` (pgrep's pids). */
const withMarker = (marker: string): ReadonlyArray<number> => {
  try {
    return execFileSync("pgrep", ["-f", marker], { encoding: "utf8" }).trim().split("\n").map(Number)
  } catch {
    return []
  }
}

/** Runs `command` in a fiber of its own; resolves once it has created `file` in the project. */
const started = (sandbox: Sandbox.Service, project: string, file: string, command: string) =>
  Effect.gen(function*() {
    const created = yield* Deferred.make<void>()
    const watcher = watch(project, (_event, name) => {
      if (name === file) Deferred.doneUnsafe(created, Effect.void)
    })
    const fiber = yield* Effect.forkDetach(Effect.exit(sandbox.exec(command)))
    if (existsSync(join(project, file))) Deferred.doneUnsafe(created, Effect.void)
    yield* Deferred.await(created)
    watcher.close()
    return fiber
  })

describe.skipIf(unavailable !== undefined)("LocalSandbox confine: the launcher", () => {
  it.live("commands share one launcher; an interrupted command's processes (a setsid one too) are gone", () =>
    Effect.gen(function*() {
      const { parent, project } = yield* setting
      const sandbox = yield* LocalSandbox.make({ cwd: project, confine: { cgroup: parent } })
      assert.deepStrictEqual(launcherPids(parent), [])
      const first = yield* sandbox.exec("echo one")
      const launcher = launcherPids(parent)
      assert.strictEqual(launcher.length, 3)
      // The launcher's own group is bounded too: a command's limit, and room for its threads and waiting shells.
      const [group] = readdirSync(parent).filter((name) => name.endsWith("-launcher"))
      assert.strictEqual(readFileSync(join(parent, group!, "pids.max"), "utf8").trim(), String(Confine.DEFAULT_MAX_PROCESSES + 64))
      assert.deepStrictEqual([first.output, (yield* sandbox.exec("echo two")).output], ["one\n", "two\n"])
      assert.deepStrictEqual(launcherPids(parent), launcher)
      // The commands see the launcher, but cannot leave their cgroup: nothing inside can write one.
      assert.include((yield* sandbox.exec("ps -eo comm")).output, "node")
      assert.match((yield* sandbox.exec(`echo $$ > ${parent}/cgroup.procs`)).output, /Read-only file system/)
      const marker = `condukt-launcher-interrupted-${process.pid}`
      // A detached child, then the command itself, each a perl whose command line holds the marker.
      const fiber = yield* started(
        sandbox,
        project,
        "running",
        `setsid perl -e 'open F, ">detached"; close F; sleep 300; # ${marker}' & ` +
          `perl -e 'select(undef, undef, undef, 0.01) until -e "detached"; open F, ">running"; close F; sleep 300; # ${marker}'`
      )
      // Both, and the command's shell.
      const pids = withMarker(marker)
      assert.isAtLeast(pids.length, 2)
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(pids.filter((pid) => !gone(pid)), [])
      assert.deepStrictEqual(readdirSync(parent).filter((name) => name.startsWith("condukt-") && !name.endsWith("-launcher")), [])
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.live("a launcher killed mid-command fails the command with a typed error, leaves nothing, and the next command starts another", () =>
    Effect.gen(function*() {
      const { parent, project } = yield* setting
      const sandbox = yield* LocalSandbox.make({ cwd: project, confine: { cgroup: parent } })
      const marker = `condukt-launcher-killed-${process.pid}`
      const fiber = yield* started(sandbox, project, "running", `touch running; exec -a ${marker} sleep 300`)
      const [command] = withMarker(marker)
      const node = launcherPids(parent).find((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[1] === "-e")
      assert.isDefined(node)
      process.kill(node!, "SIGKILL")
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Exit.isFailure(result))
      const error = Option.getOrUndefined(Exit.findErrorOption(result))
      assert.strictEqual(error?.reason._tag, "Failed")
      assert.match(error?.message ?? "", /^Cannot run the command: Cannot run bash: the sandbox's launcher exited/)
      assert.isTrue(gone(command!))
      assert.deepStrictEqual(withMarker(marker), [])
      assert.deepStrictEqual((yield* sandbox.exec("echo again")).output, "again\n")
      assert.strictEqual(launcherPids(parent).length, 3)
      assert.notInclude(launcherPids(parent), node)
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.live("the sandbox's scope closed: the launcher and the commands it runs are gone", () =>
    Effect.gen(function*() {
      const { parent, project } = yield* setting
      const scope = yield* Scope.make()
      const sandbox = yield* Scope.provide(LocalSandbox.make({ cwd: project, confine: { cgroup: parent } }), scope)
      const marker = `condukt-launcher-closed-${process.pid}`
      const fiber = yield* started(sandbox, project, "running", `touch running; exec -a ${marker} sleep 300`)
      const launcher = launcherPids(parent)
      const [command] = withMarker(marker)
      assert.strictEqual(launcher.length, 3)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(launcher.filter((pid) => !gone(pid)), [])
      assert.isTrue(gone(command!))
      assert.deepStrictEqual(readdirSync(parent).filter((name) => name.endsWith("-launcher")), [])
      assert.isTrue(Exit.isFailure(yield* Fiber.join(fiber)))
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.live("output comes back through the launcher whole and in order, and cut at the sandbox's limit", () =>
    Effect.gen(function*() {
      const { parent, project } = yield* setting
      const sandbox = yield* LocalSandbox.make({ cwd: project, confine: { cgroup: parent } })
      assert.deepStrictEqual(yield* sandbox.exec("echo a; echo b >&2; echo c; exit 3"), { output: "a\nb\nc\n", exitCode: 3, truncated: false })
      const big = yield* sandbox.exec("head -c 3000000 /dev/zero | tr '\\0' x")
      assert.deepStrictEqual([big.output.length, big.output.replaceAll("x", ""), big.truncated], [3_000_000, "", false])
      const small = yield* LocalSandbox.make({ cwd: project, maxOutputBytes: 1000, confine: { cgroup: parent } })
      const cut = yield* small.exec("head -c 100000 /dev/zero | tr '\\0' y; echo never")
      assert.deepStrictEqual([cut.output, cut.exitCode, cut.truncated], ["y".repeat(1000), 0, true])
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.live("without a cgroup (maxProcesses: false) each command has a bwrap of its own, and what it leaves still dies with it", () =>
    Effect.gen(function*() {
      const { project } = yield* setting
      const sandbox = yield* LocalSandbox.make({ cwd: project, confine: { maxProcesses: false } })
      // Its namespace holds bwrap's init and the command (bash became ps), no launcher.
      assert.deepStrictEqual((yield* sandbox.exec("ps -eo comm --no-headers")).output.split("\n").filter((name) => name !== ""), ["bwrap", "ps"])
      const marker = `condukt-launcher-none-${process.pid}`
      assert.strictEqual((yield* sandbox.exec(`setsid perl -e 'sleep 300; # ${marker}' >/dev/null 2>&1 & echo started`)).output, "started\n")
      assert.deepStrictEqual(withMarker(marker), [])
    }).pipe(Effect.scoped, Effect.provide(host)))
})
