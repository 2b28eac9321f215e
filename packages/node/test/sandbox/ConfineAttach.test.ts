/**
 * LocalSandbox `confine`: a command cannot attach to its sandbox's launcher (docs/decisions/0070),
 * the escape corpus's way: each attack shown to work unconfined against a bystander of the same
 * user — a Node process with an IPC channel, as the launcher is — then refused confined, against
 * the launcher itself. Taken over, the launcher's channel would let a command write anything to
 * the host. The attacks are a Perl script (Perl is on every Debian: `perl-base` is essential),
 * calling the syscalls by number.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { execFileSync, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import * as Cgroup from "../../src/sandbox/Cgroup.ts"
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
  if (why !== undefined) process.stderr.write(`ConfineAttach.test: skipped: ${why}\n`)
  return why
})()

/**
 * The attacks on process `$pid` (or, given `launcher`, the sandbox's launcher: the Node running
 * its program, not bwrap's init holding the same arguments), its descriptor `$fd` being its IPC channel: each line says what the kernel answered.
 * PTRACE_SEIZE does not stop the target, and the tracer's exit detaches it.
 */
const ATTACK = String.raw`use strict;
my ($pid, $fd) = @ARGV;
if ($pid eq "launcher") {
  for my $cmdline (glob("/proc/[0-9]*/cmdline")) {
    open(my $f, "<", $cmdline) or next;
    local $/;
    my $text = <$f>;
    if (defined $text && $text =~ /^[^\0]*\/node\0-e\0[^\0]*running = new Map/) { ($pid) = $cmdline =~ m{/proc/(\d+)/}; last }
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

const project = Effect.acquireRelease(
  Effect.sync(() => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "condukt-attach-")))
    const project = join(root, "project")
    mkdirSync(project)
    writeFileSync(join(project, "attack.pl"), ATTACK)
    return { root, project }
  }),
  ({ root }) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
)

describe.skipIf(unavailable !== undefined)("LocalSandbox confine: a command cannot attach to the launcher", () => {
  it.effect("ptrace, process_vm_writev, /proc/<pid>/mem, environ, its descriptors and pidfd_getfd: allowed against a bystander unconfined, refused against the launcher confined", () =>
    Effect.gen(function*() {
      const at = yield* project
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
      const inside = yield* confined.exec("perl attack.pl launcher 4")
      assert.strictEqual(
        inside.output,
        [
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
      )
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
      const at = yield* project
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
