/**
 * Seccomp: the ways a confined command could reach a host Unix socket (or something as good), each
 * tried for real by a small C program calling the syscalls by number (test/fixtures/escapeProbe.c,
 * compiled here with the machine's cc: Debian's gcc is on every machine of ours and CI's), the
 * escape corpus's way: shown to work unconfined, refused confined, and a server the test listens
 * on in the host seeing nothing from the confined try. Where a case needs the program itself to
 * hold something (a descriptor from its parent, a session keyring), the program is a child of the
 * test (test/fixtures/confinedCommands.ts) that runs one command each way a command can be started.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Queue } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import type * as Sandbox from "@condukt/core/Sandbox"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import * as Skip from "@condukt/testing/Skip"
import * as Bubblewrap from "./bubblewrap.ts"

const host = Layer.merge(NodeServices.layer, ProcessBudget.layer())

const PROBE = join(import.meta.dirname, "../fixtures/escapeProbe.c")
const PROGRAM = join(import.meta.dirname, "../fixtures/confinedCommands.ts")

/** Why the cases cannot run here (no bubblewrap, no C compiler), said on stderr; or undefined. */
const unavailable = ((): string | undefined => {
  const missing = Bubblewrap.missing()
  if (missing !== undefined) {
    process.stderr.write(`Seccomp.escapes.test: skipped: ${missing}\n`)
    return missing
  }
  try {
    execFileSync("cc", ["--version"], { stdio: "ignore" })
    return undefined
  } catch (error) {
    const why = String((error as { stderr?: unknown }).stderr ?? error).trim()
    process.stderr.write(`Seccomp.escapes.test: skipped: ${why}\n`)
    return why
  }
})()

/** Whether this host lets anyone use io_uring (`kernel.io_uring_disabled`): where not, nothing escapes by it unconfined either. */
const ioUring = ((): boolean => {
  try {
    return readFileSync("/proc/sys/kernel/io_uring_disabled", "utf8").trim() === "0"
  } catch {
    return true
  }
})()

/**
 * A project (the sandbox's cwd) holding the compiled probe, and a Unix stream server of the host's
 * in it — inside the cwd, where a confined command sees it — counting its connections.
 */
const setting = Effect.gen(function*() {
  const project = yield* Effect.acquireRelease(
    Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "condukt-seccomp-")))),
    (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
  )
  execFileSync("cc", ["-O1", "-o", join(project, "escapeProbe"), PROBE], { stdio: ["ignore", "ignore", "inherit"] })
  const socket = join(project, "host.sock")
  const connections = { count: 0 }
  yield* Effect.acquireRelease(
    Effect.callback<net.Server>((resume) => {
      const listening = net.createServer((peer) => {
        connections.count++
        peer.end("hello over unix\n")
      }).listen(socket, () => resume(Effect.succeed(listening)))
    }),
    (listening) => Effect.callback<void>((resume) => void listening.close(() => resume(Effect.void)))
  )
  /**
   * The connections the server has taken, once every connection made so far has reached it: the
   * test's own, made last, is greeted after any earlier one waiting in the backlog was taken.
   */
  const taken = Effect.callback<number>((resume) => {
    net.connect(socket).once("data", function(this: net.Socket) {
      this.destroy()
      resume(Effect.succeed(connections.count - 1))
    })
  })
  return { project, socket, taken }
})

const sandboxes = (project: string) =>
  Effect.all({
    open: LocalSandbox.make({ cwd: project }),
    confined: LocalSandbox.make({ cwd: project, confine: true }),
    // No cgroup, no launcher: a bwrap of the command's own, whose command line is Confine's.
    perCommand: LocalSandbox.make({ cwd: project, confine: { maxProcesses: false } })
  })

const output = (sandbox: Sandbox.Service, command: string) => Effect.map(sandbox.exec(command), (result) => result.output)

/** A child process's stdout, line by line, and the child killed with the scope. */
const lines = (child: () => ChildProcess) =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<string>()
    const running = yield* Effect.acquireRelease(Effect.sync(child), (started) => Effect.sync(() => started.kill("SIGKILL")))
    let pending = ""
    running.stdout?.on("data", (chunk: Buffer) => {
      const parts = (pending + chunk.toString("utf8")).split("\n")
      pending = parts.pop() ?? ""
      for (const line of parts) Queue.offerUnsafe(queue, line)
    })
    return { next: Queue.take(queue) }
  })

/** Runs `command` through confinedCommands.ts started by `file args` (the program's parent), its outputs by variant. */
const program = (project: string, command: string, start: (args: ReadonlyArray<string>) => ChildProcess) =>
  Effect.callback<{ readonly said: string; readonly outputs: Record<string, string> }>((resume) => {
    const child = start([process.execPath, PROGRAM, project, command])
    let stdout = ""
    let stderr = ""
    child.stdout?.on("data", (chunk: Buffer) => void (stdout += chunk.toString("utf8")))
    child.stderr?.on("data", (chunk: Buffer) => void (stderr += chunk.toString("utf8")))
    child.on("close", () => {
      const last = stdout.trimEnd().split("\n").at(-1) ?? ""
      try {
        resume(Effect.succeed({ said: stdout.slice(0, stdout.length - last.length - 1), outputs: JSON.parse(last) }))
      } catch {
        resume(Effect.die(new Error(`confinedCommands.ts said ${JSON.stringify(stdout)}, on stderr ${JSON.stringify(stderr)}`)))
      }
    })
  })

describe("Seccomp: a confined command reaches no host Unix socket", Skip.when(unavailable), () => {
  it.effect("io_uring: an AF_UNIX socket made by IORING_OP_SOCKET reaches a host server unconfined; confined, io_uring is not there", () =>
    Effect.gen(function*() {
      const { project, socket, taken } = yield* setting
      const { confined, open, perCommand } = yield* sandboxes(project)
      const probe = `./escapeProbe io_uring ${socket}`
      if (ioUring) {
        assert.strictEqual(
          yield* output(open, probe),
          "io_uring_setup: ok\nmmap: ok\nio_uring_enter: ok\nIORING_OP_SOCKET: ok\nconnect: ok\nread: hello over unix\n"
        )
        assert.strictEqual(yield* taken, 1)
      } else {
        process.stderr.write("Seccomp.escapes.test: io_uring is disabled on this host (kernel.io_uring_disabled): no escape to show unconfined\n")
      }
      const before = yield* taken
      // ENOSYS, as on a kernel without io_uring: programs that use it (libuv) fall back.
      assert.strictEqual(yield* output(confined, probe), "io_uring_setup: Function not implemented\n")
      assert.strictEqual(yield* output(perCommand, probe), "io_uring_setup: Function not implemented\n")
      assert.strictEqual(yield* taken, before + 1)
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("a datagram socketpair, readdressed, reaches a host datagram socket (a journal, /dev/log) unconfined; confined it cannot be made, stream and seqpacket pairs still can, connected for good", () =>
    Effect.gen(function*() {
      const { project, socket } = yield* setting
      const { confined, open } = yield* sandboxes(project)
      const dgram = join(project, "host.dgram")
      const listener = yield* lines(() => spawn(join(project, "escapeProbe"), ["dgram-listen", dgram], { stdio: ["ignore", "pipe", "inherit"] }))
      assert.deepStrictEqual([yield* listener.next, yield* listener.next], ["bind: ok", "ready"])
      const probe = (tag: string) => `./escapeProbe socketpair ${dgram} ${socket} ${tag}`
      const pairs = "socketpair stream: ok\nstream connect: Transport endpoint is already connected\nsocketpair seqpacket: ok\n"
      assert.strictEqual(yield* output(open, probe("open")), `socketpair dgram: ok\ndgram sendto: ok\n${pairs}`)
      assert.strictEqual(yield* listener.next, "got: hello from open")
      assert.strictEqual(yield* output(confined, probe("confined")), `socketpair dgram: Permission denied\n${pairs}`)
      // Datagrams arrive in order: the next one the listener gets is this last unconfined one.
      yield* output(open, probe("last"))
      assert.strictEqual(yield* listener.next, "got: hello from last")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("socket families: AF_UNIX and AF_VSOCK (the hypervisor's host, past any network namespace) refused, AF_INET and AF_NETLINK allowed", () =>
    Effect.gen(function*() {
      const { project } = yield* setting
      const { confined, open } = yield* sandboxes(project)
      assert.include(yield* output(open, "./escapeProbe families"), "socket AF_UNIX: ok\n")
      assert.strictEqual(
        yield* output(confined, "./escapeProbe families"),
        "socket AF_INET: ok\nsocket AF_NETLINK: ok\nsocket AF_UNIX: Permission denied\nsocket AF_VSOCK: Permission denied\n"
      )
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("the i386 ABI (int $0x80 from a 64-bit program) and x32's numbers are filtered as x86-64's: socketcall, socket, datagram pairs, io_uring", () =>
    Effect.gen(function*() {
      const { project, socket, taken } = yield* setting
      const { confined, open } = yield* sandboxes(project)
      const probe = `./escapeProbe i386 ${socket}`
      const unconfined = yield* open.exec(probe)
      if (unconfined.exitCode === 0 && unconfined.output.startsWith("socketcall SYS_SOCKET: ok\n")) {
        assert.strictEqual(
          unconfined.output,
          "socketcall SYS_SOCKET: ok\nconnect: ok\nread: hello over unix\nsocketcall SYS_SOCKETPAIR dgram: ok\nsocket: ok\nsocketpair dgram: ok\n" +
            `io_uring_setup: ${ioUring ? "ok" : "Operation not permitted"}\n`
        )
      } else {
        process.stderr.write(`Seccomp.escapes.test: no i386 emulation here (${unconfined.output.trim()}): no escape to show unconfined\n`)
      }
      const before = yield* taken
      assert.strictEqual(
        yield* output(confined, probe),
        "socketcall SYS_SOCKET: Permission denied\nsocketcall SYS_SOCKETPAIR dgram: Permission denied\nsocket: Permission denied\n" +
          "socketpair dgram: Permission denied\nio_uring_setup: Function not implemented\n"
      )
      assert.strictEqual(yield* taken, before + 1)
      // x32 (off in Debian's kernels: ENOSYS unconfined), refused whole by the filter.
      assert.strictEqual(yield* output(confined, "./escapeProbe x32"), "x32 socket: Operation not permitted\nx32 io_uring_setup: Operation not permitted\n")
    }).pipe(Effect.scoped, Effect.provide(host)), Skip.when(process.arch === "x64" ? undefined : `int $0x80 and x32 are x86-64's; this is ${process.arch}`))

  it.effect("no socket in sight opens through /proc/<pid>/fd: the command's own and bwrap's init's (ENXIO, as anywhere), and the launcher's are closed to it", () =>
    Effect.gen(function*() {
      const { project } = yield* setting
      const { confined, perCommand } = yield* sandboxes(project)
      // pidfd_getfd, which would take one instead, is refused: ConfineLauncher.test.ts.
      assert.strictEqual(yield* output(confined, "./escapeProbe procfd"), "sockets tried: some\nsockets opened: 0\ndescriptors closed to it: some\n")
      assert.strictEqual(yield* output(perCommand, "./escapeProbe procfd"), "sockets tried: some\nsockets opened: 0\ndescriptors closed to it: none\n")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("a descriptor the program inherited (a socket to a host server) reaches its unconfined commands, none of its confined ones, however started", () =>
    Effect.gen(function*() {
      const { project } = yield* setting
      // A server of its own, which keeps all that comes through its one connection until its end.
      const socket = join(project, "inherited.sock")
      let received = ""
      const ended = yield* Deferred.make<string>()
      yield* Effect.acquireRelease(
        Effect.callback<net.Server>((resume) => {
          const listening = net.createServer((peer) => {
            peer.on("data", (chunk: Buffer) => void (received += chunk.toString("utf8")))
            peer.once("end", () => Deferred.doneUnsafe(ended, Effect.succeed(received)))
          }).listen(socket, () => resume(Effect.succeed(listening)))
        }),
        (listening) => Effect.callback<void>((resume) => void listening.close(() => resume(Effect.void)))
      )
      const connected = yield* Effect.acquireRelease(
        Effect.callback<net.Socket>((resume) => {
          const peer = net.connect(socket, () => resume(Effect.succeed(peer)))
        }),
        (peer) => Effect.sync(() => peer.destroy())
      )
      // The program gets the socket as its descriptor 40, as a parent may hand a program anything (Node
      // marks those it inherits below 20 close-on-exec when it starts; the others reach its children).
      const { outputs } = yield* program(project, "echo leaked >&40 && echo wrote", ([file, ...args]) =>
        spawn(file!, args, { stdio: ["ignore", "pipe", "pipe", ...Array<"ignore">(37).fill("ignore"), connected] }))
      const closed = "bash: line 1: 40: Bad file descriptor\n"
      assert.deepStrictEqual(outputs, { open: "wrote\n", launcher: closed, perCommand: closed, forwarder: closed })
      // The program and its commands are gone: the end of the test's side ends the stream after all they wrote.
      connected.end()
      assert.strictEqual(yield* Deferred.await(ended), "leaked\n")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("the program's session keyring: its unconfined commands read its keys, its confined ones reach no keyring", () =>
    Effect.gen(function*() {
      const { project } = yield* setting
      const { outputs, said } = yield* program(project, "./escapeProbe keyring-read", (args) =>
        spawn(join(project, "escapeProbe"), ["keyring-exec", "planted-in-the-keyring", ...args], { stdio: ["ignore", "pipe", "pipe"] }))
      const { open, ...confined } = outputs
      if (said === "join: ok\nadd_key: ok\n") {
        assert.strictEqual(open, "keyctl search: ok\nkeyctl read: ok\nkey: planted-in-the-keyring\n")
      } else {
        process.stderr.write(`Seccomp.escapes.test: no session keyring here (${said.trim()}): no escape to show unconfined\n`)
      }
      const refused = "keyctl search: Operation not permitted\n"
      assert.deepStrictEqual(confined, { launcher: refused, perCommand: refused, forwarder: refused })
    }).pipe(Effect.scoped, Effect.provide(host)))
})
