/**
 * LocalSandbox `confine`: the launcher's lifecycle (`Launcher`: one confined process per sandbox
 * that starts its commands). Processes are found by pid — the launcher's from its cgroup, a
 * command's by a marker in its command line — and a command is known to run by a file it creates.
 *
 * And a command cannot attach to the launcher (docs/decisions/0070's amendment), the escape
 * corpus's way: each attack shown to work unconfined against a bystander of the same user — a Node
 * process with an IPC channel, as the launcher is — then refused confined, against the launcher
 * itself. Taken over, the launcher's channel would let a command write anything to the host. The
 * attacks are a Perl script (Perl is on every Debian: `perl-base` is essential), calling the
 * syscalls by number.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, watch, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import type * as Sandbox from "@condukt/core/Sandbox"
import * as Cgroup from "../../src/sandbox/Cgroup.ts"
import * as Confine from "../../src/sandbox/Confine.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import * as Skip from "@condukt/testing/Skip"
import * as Bubblewrap from "./bubblewrap.ts"

const host = Layer.merge(NodeServices.layer, ProcessBudget.layer())

/** Why the launcher cannot be tried here (no bubblewrap, no cgroup for its commands), or undefined. */
const unavailable = ((): string | undefined => {
  const missing = Bubblewrap.missing()
  if (missing !== undefined) return missing
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

describe("LocalSandbox confine: the launcher", Skip.when(unavailable), () => {
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

/**
 * The attacks on process `$pid` (or, given `node`, the sandbox's launcher or forwarder: the Node
 * running `-e`, not bwrap's init holding the same arguments), its descriptor `$fd` being its IPC channel: each line says what the kernel answered.
 * PTRACE_SEIZE does not stop the target, and the tracer's exit detaches it.
 */
const ATTACK = String.raw`use strict;
my ($pid, $fd) = @ARGV;
if ($pid eq "node") {
  for my $cmdline (glob("/proc/[0-9]*/cmdline")) {
    open(my $f, "<", $cmdline) or next;
    local $/;
    my $text = <$f>;
    if (defined $text && $text =~ /^[^\0]*\/node\0-e\0/) { ($pid) = $cmdline =~ m{/proc/(\d+)/}; last }
  }
}
my $arm = qx(uname -m) =~ /aarch64/;
my %nr = $arm ? (ptrace => 117, vmw => 271) : (ptrace => 101, vmw => 311);
my $say = sub { my ($what, $r) = @_; print "$what: ", ($r >= 0 ? "ok" : "$!"), "\n" };
$say->("ptrace", syscall($nr{ptrace}, 0x4206, $pid + 0, 0, 0));
my $buf = "x";
my $local = pack("QQ", unpack("Q", pack("p", $buf)), 1);
my $remote = pack("QQ", 0, 1);
my $r = syscall($nr{vmw}, $pid + 0, $local, 1, $remote, 1, 0);
print "process_vm_writev: ", ($r >= 0 || $!{EFAULT} ? "ok" : "$!"), "\n";
my ($mem, $env, $byte, $sock);
$say->("mem", open($mem, "+<", "/proc/$pid/mem") ? 0 : -1);
$say->("environ", open($env, "<", "/proc/$pid/environ") && defined(read($env, $byte, 1)) ? 0 : -1);
my $link = readlink("/proc/$pid/fd/$fd");
print "fd link: ", (defined $link ? ($link =~ /^socket:/ ? "socket" : $link) : "$!"), "\n";
$say->("fd reopen", open($sock, "+<", "/proc/$pid/fd/$fd") ? 0 : -1);
my $pidfd = syscall(434, $pid + 0, 0);
$say->("pidfd_open", $pidfd);
$say->("pidfd_getfd", $pidfd < 0 ? -1 : syscall(438, $pidfd, $fd + 0, 0));
`

const attackSetting = Effect.acquireRelease(
  Effect.sync(() => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "condukt-attach-")))
    const project = join(root, "project")
    mkdirSync(project)
    writeFileSync(join(project, "attack.pl"), ATTACK)
    return { root, project }
  }),
  ({ root }) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
)

describe("LocalSandbox confine: a command cannot attach to the launcher", Skip.when(unavailable), () => {
  it.effect("ptrace, process_vm_writev, /proc/<pid>/mem, environ, its descriptors and pidfd_getfd: allowed against a bystander unconfined, refused against the launcher (and the forwarder) confined", () =>
    Effect.gen(function*() {
      const at = yield* attackSetting
      const open = yield* LocalSandbox.make({ cwd: at.project })
      const confined = yield* LocalSandbox.make({ cwd: at.project, confine: true })
      // A bystander of the same user holding an IPC channel on descriptor 3.
      const bystander = yield* Effect.acquireRelease(
        Effect.sync(() => spawn(process.execPath, ["-e", "setInterval(() => {}, 1e6)"], { stdio: ["ignore", "ignore", "ignore", "ipc"] })),
        (child) => Effect.sync(() => child.kill("SIGKILL"))
      )
      const unconfined = yield* open.exec(`perl attack.pl ${bystander.pid} 3`)
      assert.strictEqual(
        unconfined.output,
        [
          "ptrace: ok",
          "process_vm_writev: ok",
          "mem: ok",
          "environ: ok",
          "fd link: socket",
          // A socket is never reopened through /proc, even where everything else is allowed.
          "fd reopen: No such device or address",
          "pidfd_open: ok",
          "pidfd_getfd: ok",
          ""
        ].join("\n")
      )
      // The launcher's channel is its descriptor 4 (its stdio's fifth).
      const refused = [
        "ptrace: Operation not permitted",
        "process_vm_writev: Operation not permitted",
        "mem: Permission denied",
        "environ: Permission denied",
        "fd link: Permission denied",
        "fd reopen: Permission denied",
        // A pidfd only signals, which a command of the sandbox may do anyway.
        "pidfd_open: ok",
        "pidfd_getfd: Operation not permitted",
        ""
      ].join("\n")
      assert.strictEqual((yield* confined.exec("perl attack.pl node 4")).output, refused)
      // Without a cgroup, no launcher: the allow list's forwarder, beside the command in its bwrap,
      // holds the channel (its descriptor 4 too), and is as closed.
      const forwarded = yield* LocalSandbox.make({ cwd: at.project, confine: { maxProcesses: false, network: { allow: ["127.0.0.1:9"] } } })
      assert.strictEqual((yield* forwarded.exec("perl attack.pl node 4")).output, refused)
      // The filter alone, against a command's own child (dumpable, as any command is): attaching
      // and taking its descriptors refused; its /proc files, the sandbox's own, stay open to it.
      assert.strictEqual(
        (yield* confined.exec("sleep 30 & perl attack.pl $! 0; kill $!")).output,
        [
          "ptrace: Operation not permitted",
          "process_vm_writev: Operation not permitted",
          "mem: ok",
          "environ: ok",
          "fd link: /dev/null",
          "fd reopen: ok",
          "pidfd_open: ok",
          "pidfd_getfd: Operation not permitted",
          ""
        ].join("\n")
      )
      // The commands still run through it.
      assert.strictEqual((yield* confined.exec("echo still")).output, "still\n")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("a command run as root holds no capability: it cannot unmount what hides a denied path", () =>
    Effect.gen(function*() {
      const at = yield* attackSetting
      // Outside /tmp, which the sandbox replaces by its own: under the home directory.
      const home = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(homedir(), ".condukt-attach-"))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      mkdirSync(join(home, ".ssh"), { recursive: true })
      writeFileSync(join(home, ".ssh/id_rsa"), "planted")
      const confined = yield* LocalSandbox.make({ cwd: at.project, confine: { denyRead: [join(home, ".ssh")] } })
      const result = yield* confined.exec(`grep CapEff /proc/self/status; umount ${home}/.ssh; cat ${home}/.ssh/id_rsa`)
      assert.notInclude(result.output, "planted")
      assert.include(result.output, "umount: ")
      assert.include(result.output, "CapEff:\t0000000000000000\n")
    }).pipe(Effect.scoped, Effect.provide(host)))
})
