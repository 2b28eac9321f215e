/**
 * LocalSandbox `confine`: an escape corpus. Each case runs a real command unconfined, to show it
 * escapes there, and confined, to show the kernel stops it. bubblewrap comes from the project's own
 * script (scripts/setup-bubblewrap.sh), run here when `bwrap` is missing.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import * as Redactor from "@condukt/core/Redactor"
import * as Tool from "@condukt/core/Tool"
import * as Tools from "@condukt/core/Tools"
import * as Condukt from "../../src/Condukt.ts"
import type * as Sandbox from "@condukt/core/Sandbox"
import * as Cgroup from "../../src/sandbox/Cgroup.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"
import * as Skip from "@condukt/testing/Skip"
import * as Bubblewrap from "./bubblewrap.ts"

const host = Layer.merge(NodeServices.layer, ProcessBudget.layer())

/**
 * bubblewrap, from the project's script when it is missing (Debian's package, as root). Where it
 * cannot be had (no root, no package source), the corpus is skipped, saying why on stderr; the
 * fail-closed test below runs everywhere.
 */
const unavailable = ((): string | undefined => {
  const why = Bubblewrap.missing()
  if (why !== undefined) process.stderr.write(`Confine.test: bubblewrap unavailable, escape corpus skipped: ${why}\n`)
  return why
})()

/**
 * Why no cgroup can hold a process limit here (no writable one with the pids controller: a user
 * without a delegated cgroup), or undefined. The process-limit cases are skipped then, saying why;
 * CI runs as root, where the pids hierarchy is writable.
 */
const noCgroup = ((): string | undefined => {
  const place = Cgroup.find(undefined)
  const why = typeof place === "string" ? place : Cgroup.probe(place)
  if (why !== undefined) process.stderr.write(`Confine.test: no cgroup for the process limit, its cases skipped: ${why}\n`)
  return why
})()

/** A project directory (the sandbox's cwd), a directory beside it, and a fake home holding a key. */
const layout = Effect.acquireRelease(
  Effect.sync(() => {
    const root = mkdtempSync(join(tmpdir(), "condukt-confine-"))
    const project = join(root, "project")
    const outside = join(root, "outside")
    const home = join(root, "home")
    for (const dir of [project, outside, join(home, ".ssh")]) mkdirSync(dir, { recursive: true })
    writeFileSync(join(home, ".ssh/id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY----- planted")
    writeFileSync(join(home, ".netrc"), "machine example.com password planted")
    return { root, project, outside, home }
  }),
  ({ root }) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
)

type Layout = Effect.Success<typeof layout>

/** The processes still running whose command line holds `marker` (pgrep's pids; none: ""). */
const survivors = (marker: string): string => {
  try {
    return execFileSync("pgrep", ["-f", marker], { encoding: "utf8" }).trim()
  } catch {
    return ""
  }
}

/** The commands' cgroups left in `parent` (a sandbox's launcher's, which lives as long as the sandbox, aside). */
const commandGroups = (parent: string): ReadonlyArray<string> =>
  readdirSync(parent).filter((name) => name.startsWith("condukt-") && !name.endsWith("-launcher"))

const sandboxes = (at: Layout) =>
  Effect.all({
    open: LocalSandbox.make({ cwd: at.project }),
    confined: LocalSandbox.make({ cwd: at.project, confine: { denyRead: [join(at.home, ".ssh"), join(at.home, ".netrc")] } })
  })

const run = (sandbox: Sandbox.Service, command: string) => Effect.map(sandbox.exec(command), (r) => ({ exitCode: r.exitCode, output: r.output.trim() }))

describe("LocalSandbox confine: the escape corpus", Skip.when(unavailable), () => {
  it.effect("writes land only under the cwd: absolute paths, .., a planted symlink and /proc/self/cwd all stay out", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const { confined, open } = yield* sandboxes(at)
      const attempts = [
        `echo a > ${at.outside}/absolute`,
        `echo b > ../outside/dotdot`,
        `ln -s ${at.outside} link && echo c > link/symlink`,
        `echo d > /proc/self/cwd/../outside/proc`
      ]
      for (const attempt of attempts) {
        rmSync(join(at.project, "link"), { force: true })
        assert.strictEqual((yield* run(open, attempt)).exitCode, 0, attempt)
      }
      assert.deepStrictEqual(["absolute", "dotdot", "symlink", "proc"].map((f) => existsSync(join(at.outside, f))), [true, true, true, true])
      rmSync(at.outside, { recursive: true })
      mkdirSync(at.outside)
      for (const attempt of attempts) {
        rmSync(join(at.project, "link"), { force: true })
        const result = yield* run(confined, attempt)
        assert.notStrictEqual(result.exitCode, 0, attempt)
        // Read-only, or not there at all: the directory beside it is under the host's /tmp, which
        // the sandbox replaces by a private one.
        assert.match(result.output, /Read-only file system|No such file or directory/, attempt)
      }
      assert.deepStrictEqual(["absolute", "dotdot", "symlink", "proc"].map((f) => existsSync(join(at.outside, f))), [false, false, false, false])
      // The host's own files, outside /tmp: read-only.
      const escape = join(homedir(), `condukt-confine-escape-${process.pid}`)
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(escape, { force: true })))
      assert.strictEqual((yield* run(open, `echo e > ${escape}`)).exitCode, 0)
      rmSync(escape)
      assert.match((yield* run(confined, `echo e > ${escape}`)).output, /Read-only file system/)
      assert.isFalse(existsSync(escape))
      // Inside the cwd, and in its private /tmp, a command writes as it always did.
      assert.deepStrictEqual(yield* run(confined, "echo kept > inside.txt && echo t > /tmp/t && cat /tmp/t inside.txt"), { exitCode: 0, output: "t\nkept" })
      assert.strictEqual(readFileSync(join(at.project, "inside.txt"), "utf8"), "kept\n")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("a denied key reads empty; another process's environment is out of sight", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const { confined, open } = yield* sandboxes(at)
      assert.match((yield* run(open, `cat ${at.home}/.ssh/id_rsa ${at.home}/.netrc`)).output, /planted[\s\S]*planted/)
      // The directory shows empty; the file cannot be read (or reads empty).
      assert.deepStrictEqual(yield* run(confined, `ls -A ${at.home}/.ssh; echo end`), { exitCode: 0, output: "end" })
      assert.notInclude((yield* run(confined, `cat ${at.home}/.ssh/id_rsa ${at.home}/.netrc`)).output, "planted")
      // A bystander holding a secret in its environment.
      const bystander = yield* Effect.acquireRelease(
        Effect.sync(() => spawn("sleep", ["60"], { env: { ...process.env, PLANTED_SECRET: "s3cr3t-value" }, stdio: "ignore" })),
        (child) => Effect.sync(() => child.kill("SIGKILL"))
      )
      const read = `tr '\\0' '\\n' < /proc/${bystander.pid}/environ | grep PLANTED_SECRET`
      assert.deepStrictEqual(yield* run(open, read), { exitCode: 0, output: "PLANTED_SECRET=s3cr3t-value" })
      const confinedRead = yield* run(confined, read)
      assert.notStrictEqual(confinedRead.exitCode, 0)
      assert.notInclude(confinedRead.output, "s3cr3t-value")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("the .env files of the directories above the cwd are hidden; the project's own is not", () =>
    Effect.gen(function*() {
      // Outside /tmp, which the sandbox replaces by its own: under the home directory.
      const monorepo = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(homedir(), ".condukt-confine-env-"))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      const project = join(monorepo, "packages/app")
      mkdirSync(project, { recursive: true })
      writeFileSync(join(monorepo, ".env"), "API_KEY=planted-above")
      writeFileSync(join(monorepo, ".env.production"), "DB_PASSWORD=planted-prod")
      writeFileSync(join(project, ".env"), "LOCAL=mine")
      const open = yield* LocalSandbox.make({ cwd: project })
      const confined = yield* LocalSandbox.make({ cwd: project, confine: true })
      const read = "cat ../../.env ../../.env.production .env 2>/dev/null; echo"
      assert.strictEqual((yield* run(open, read)).output, "API_KEY=planted-aboveDB_PASSWORD=planted-prodLOCAL=mine")
      assert.strictEqual((yield* run(confined, read)).output, "LOCAL=mine")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("no network: a loopback server the test listens on is out of reach", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const { confined, open } = yield* sandboxes(at)
      const server = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<net.Server>((resolve) => {
            const listening = net.createServer((socket) => socket.end("hello from the host\n")).listen(0, "127.0.0.1", () => resolve(listening))
          })
        ),
        (listening) => Effect.promise(() => new Promise<void>((resolve) => listening.close(() => resolve())))
      )
      const port = (server.address() as net.AddressInfo).port
      const connect = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3`
      assert.deepStrictEqual(yield* run(open, connect), { exitCode: 0, output: "hello from the host" })
      const refused = yield* run(confined, connect)
      assert.notStrictEqual(refused.exitCode, 0)
      assert.match(refused.output, /Connection refused/)
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("an allow list: a host on it is reached through the sandbox's proxy, one not on it is refused saying why", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const { open } = yield* sandboxes(at)
      const serve = Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<http.Server>((resolve) => {
            const listening = http.createServer((request, response) => response.end(`hello ${request.url}\n`)).listen(0, "127.0.0.1", () => resolve(listening))
          })
        ),
        (listening) => Effect.promise(() => new Promise<void>((resolve) => listening.close(() => resolve())))
      ).pipe(Effect.map((listening) => (listening.address() as net.AddressInfo).port))
      const allowed = yield* serve
      const other = yield* serve
      const confined = yield* LocalSandbox.make({ cwd: at.project, confine: { network: { allow: [`127.0.0.1:${allowed}`] } } })
      const fetch = `curl -sS http://127.0.0.1:${allowed}/a; curl -sS http://127.0.0.1:${other}/b`
      assert.deepStrictEqual(yield* run(open, fetch), { exitCode: 0, output: "hello /a\nhello /b" })
      assert.deepStrictEqual(yield* run(confined, fetch), {
        exitCode: 0,
        output: `hello /a\nBlocked by the sandbox's network allow list: 127.0.0.1:${other} is not on it (allowed: 127.0.0.1:${allowed})`
      })
      // Through a tunnel (as HTTPS goes) the same.
      const tunnel = `curl -sS -p http://127.0.0.1:${allowed}/t; curl -sS -p http://127.0.0.1:${other}/u; echo " $?"`
      assert.deepStrictEqual(yield* run(confined, tunnel), { exitCode: 0, output: "hello /t\ncurl: (56) CONNECT tunnel failed, response 403\n 56" })
      // Around the proxy, nothing: the namespace has only its loopback.
      const direct = yield* run(confined, `exec 3<>/dev/tcp/127.0.0.1/${allowed}`)
      assert.notStrictEqual(direct.exitCode, 0)
      assert.match(direct.output, /Connection refused/)
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("the host's processes cannot be signalled, and what a command leaves behind (setsid too) dies with the call", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const { confined, open } = yield* sandboxes(at)
      const signal = `kill -0 ${process.pid}`
      assert.strictEqual((yield* run(open, signal)).exitCode, 0)
      const refused = yield* run(confined, signal)
      assert.notStrictEqual(refused.exitCode, 0)
      assert.match(refused.output, /No such process/)
      // A detached child with a marker in its command line, then the call ends.
      const marker = `condukt-confine-orphan-${process.pid}`
      assert.strictEqual((yield* run(confined, `setsid bash -c 'exec -a ${marker} sleep 300' >/dev/null 2>&1 & echo started`)).output, "started")
      assert.strictEqual(survivors(marker), "")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("no Unix socket: a server the host listens on, even inside the cwd, cannot be reached", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const { confined, open } = yield* sandboxes(at)
      const path = join(at.project, "host.sock")
      yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<net.Server>((resolve) => {
            const listening = net.createServer((socket) => socket.end("hello over unix\n")).listen(path, () => resolve(listening))
          })
        ),
        (listening) => Effect.promise(() => new Promise<void>((resolve) => listening.close(() => resolve())))
      )
      const client = `${realpathSync(process.execPath)} -e 'require("net").connect(process.argv[1]).on("data", (d) => process.stdout.write(d)).on("error", (e) => { console.log(e.code); process.exitCode = 1 })' ${path}`
      assert.deepStrictEqual(yield* run(open, client), { exitCode: 0, output: "hello over unix" })
      assert.deepStrictEqual(yield* run(confined, client), { exitCode: 1, output: "EACCES" })
      // A pipe between the command's own processes works as ever.
      assert.deepStrictEqual(yield* run(confined, "echo through | cat"), { exitCode: 0, output: "through" })
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("writes are bounded: the private /tmp by its size, any file (a 10 GB one) by maxFileBytes", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const smallTmp = yield* LocalSandbox.make({ cwd: at.project, confine: { tmpBytes: 4 * 1024 * 1024 } })
      assert.match((yield* run(smallTmp, "head -c 8M /dev/zero > /tmp/fill")).output, /No space left on device/)
      const small = yield* LocalSandbox.make({ cwd: at.project, confine: { maxFileBytes: 2 * 1024 * 1024 } })
      // A 10 GB write stops at the limit.
      const big = yield* run(small, "head -c 10G /dev/zero > big.bin; echo $?; stat -c %s big.bin")
      assert.match(big.output, /File size limit exceeded|File too large|^153$/m)
      assert.isAtMost(Number(big.output.split("\n").at(-1)), 2 * 1024 * 1024)
      assert.deepStrictEqual(yield* run(small, "head -c 1M /dev/zero > ok.bin && stat -c %s ok.bin"), { exitCode: 0, output: "1048576" })
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("/dev is read-only and /dev/shm bounded (a quarter of tmpBytes); what a command leaves there, or in SysV IPC, is gone by the next", () =>
    Effect.gen(function*() {
      const at = yield* layout
      // /dev/shm holds 1 MiB here; bwrap's own /dev held half the host's memory, and kept what it got.
      const sandbox = yield* LocalSandbox.make({ cwd: at.project, confine: { tmpBytes: 4 * 1024 * 1024 } })
      const perCommand = yield* LocalSandbox.make({ cwd: at.project, confine: { tmpBytes: 4 * 1024 * 1024, maxProcesses: false } })
      for (const confined of [sandbox, perCommand]) {
        assert.match((yield* run(confined, "head -c 2M /dev/zero > /dev/shm/fill")).output, /No space left on device/)
        assert.match((yield* run(confined, "echo x > /dev/made")).output, /Read-only file system/)
        assert.deepStrictEqual(yield* run(confined, "head -c 512K /dev/zero > /dev/shm/kept && ipcmk -M 65536 >/dev/null && ls /dev/shm && ipcs -m | grep -c '^0x'"), {
          exitCode: 0,
          output: "kept\n1"
        })
        // Writing to a device still works.
        assert.deepStrictEqual(yield* run(confined, "echo x > /dev/null && ls -A /dev/shm; ipcs -m | grep -c '^0x'"), { exitCode: 1, output: "0" })
      }
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.live("a fork bomb stops at the process limit, the host still answers, and nothing of it is left (nor of an interrupted call)", () =>
    Effect.gen(function*() {
      const at = yield* layout
      // The commands' cgroups are made in one of the test's own, whose peak counts all of theirs.
      const place = Cgroup.find(undefined)
      if (typeof place === "string") return assert.fail(`no cgroup can hold the process limit here: ${place}`)
      const parent = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const directory = join(place.directory, `condukt-confine-test-${process.pid}`)
          mkdirSync(directory)
          if (place.version === 2) writeFileSync(join(directory, "cgroup.subtree_control"), "+pids")
          return directory
        }),
        (directory) => Cgroup.remove(directory)
      )
      // A cgroup left by a program killed mid-command (pid 4194305: above the kernel's largest pid_max),
      // and its sandbox's launcher's, go when a sandbox is built.
      mkdirSync(join(parent, "condukt-4194305-1"))
      mkdirSync(join(parent, "condukt-4194305-2-launcher"))
      const limited = yield* LocalSandbox.make({ cwd: at.project, confine: { maxProcesses: 64, cgroup: parent } })
      assert.isFalse(existsSync(join(parent, "condukt-4194305-1")))
      assert.isFalse(existsSync(join(parent, "condukt-4194305-2-launcher")))
      const marker = `condukt-confine-bomb-${process.pid}`
      // The bomb, then a loop that keeps the call alive until its timeout.
      const error = yield* Effect.flip(limited.exec(`: ${marker}; bomb() { bomb | bomb & }; bomb; while :; do :; done`, { timeout: "3 seconds" }))
      assert.strictEqual(error.reason._tag, "Timeout")
      assert.include(error.reason._tag === "Timeout" ? error.reason.output : "", "Resource temporarily unavailable")
      // The kernel charges a fork to every level before it finds the command's own limit reached and
      // takes it back: the parent's peak can see that one refused fork. The bomb did grow there.
      // Beside the command's group, the parent holds the sandbox's launcher's (bwrap and its Node).
      const launcher = readdirSync(parent).filter((name) => name.endsWith("-launcher"))
      assert.strictEqual(launcher.length, 1)
      const peak = Number(readFileSync(join(parent, "pids.peak"), "utf8"))
      assert.isAtMost(peak, 64 + 1 + Number(readFileSync(join(parent, launcher[0]!, "pids.peak"), "utf8")))
      assert.isAtLeast(peak, 32)
      assert.strictEqual(survivors(marker), "")
      assert.deepStrictEqual(commandGroups(parent), [])
      // The host answers: a command runs, confined or not.
      assert.deepStrictEqual(yield* run(limited, "echo alive"), { exitCode: 0, output: "alive" })
      // A call interrupted (its turn aborted) leaves neither processes nor its cgroup.
      const sleeper = `condukt-confine-interrupted-${process.pid}`
      assert.isTrue(Option.isNone(yield* Effect.timeoutOption(limited.exec(`exec -a ${sleeper} sleep 300`), "1 second")))
      assert.strictEqual(survivors(sleeper), "")
      assert.deepStrictEqual(commandGroups(parent), [])
    }).pipe(Effect.scoped, Effect.provide(host)), Skip.when(noCgroup))

  it.effect("the process limit holds for each command: more processes than it allows fail to start", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const { open } = yield* sandboxes(at)
      const limited16 = yield* LocalSandbox.make({ cwd: at.project, confine: { maxProcesses: 16 } })
      // 30 children at once (perl's fork does not retry as bash's does), then the count of those that started.
      const children = `perl -e 'my @started; for (1..30) { my $p = fork(); last unless defined $p; if ($p == 0) { sleep 60; exit } push @started, $p } print scalar(@started), "\\n"; kill "KILL", @started'`
      assert.deepStrictEqual(yield* run(open, children), { exitCode: 0, output: "30" })
      const limited = yield* run(limited16, children)
      assert.isBelow(Number(limited.output), 16)
    }).pipe(Effect.scoped, Effect.provide(host)), Skip.when(noCgroup))

  it.effect("Tools.Command runs confined on a confined sandbox unless it opts out", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const { confined, open } = yield* sandboxes(at)
      const context = (sandbox: Sandbox.Service): Tool.Context => ({
        sessionId: "test",
        agent: "test",
        sandbox,
        cwd: sandbox.cwd,
        secrets: {},
        redact: Redactor.secrets({}).redact,
        assigns: {},
        callId: "call_1",
        approve: Tool.cannotAsk("Command")
      })
      const call = (tool: ReturnType<typeof Tools.Command>, sandbox: Sandbox.Service, args: ReadonlyArray<string>) =>
        Effect.flatMap(tool.decode({ args }), (decoded) => tool.call(decoded, context(sandbox))).pipe(
          Effect.provide(Condukt.layer),
          Effect.map(String),
          Effect.catch((error) => Effect.succeed(typeof error === "string" ? error : error.message))
        )
      const cat = Tools.Command({ command: "cat", cwd: at.project })
      const key = join(at.home, ".ssh/id_rsa")
      assert.strictEqual(yield* call(cat, open, [key]), "-----BEGIN OPENSSH PRIVATE KEY----- planted")
      const refused = yield* call(cat, confined, [key])
      assert.notInclude(refused, "planted")
      assert.match(refused, /\(exit code: 1\)$/)
      const touch = Tools.Command({ command: "touch", cwd: at.project })
      assert.match(yield* call(touch, confined, [join(at.outside, "by-command")]), /Read-only file system|No such file or directory/)
      assert.isFalse(existsSync(join(at.outside, "by-command")))
      // Opted out, it runs on the host with the user's rights, as on an unconfined sandbox.
      const hostCat = Tools.Command({ command: "cat", cwd: at.project, confine: false })
      assert.strictEqual(yield* call(hostCat, confined, [key]), "-----BEGIN OPENSSH PRIVATE KEY----- planted")
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.live("a timeout still kills the confined command, and nothing of it is left", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const { confined } = yield* sandboxes(at)
      const marker = `condukt-confine-timeout-${process.pid}`
      const error = yield* Effect.flip(confined.exec(`echo begun; exec -a ${marker} sleep 300`, { timeout: "1 second" }))
      assert.strictEqual(error.reason._tag, "Timeout")
      assert.include(error.reason._tag === "Timeout" ? error.reason.output : "", "begun")
      assert.strictEqual(survivors(marker), "")
    }).pipe(Effect.scoped, Effect.provide(host)))
})

describe("LocalSandbox confine", () => {
  it.effect("fails closed: a process limit where no cgroup can hold it fails the build, naming what is missing", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const error = yield* Effect.flip(LocalSandbox.make({ cwd: at.project, confine: { maxProcesses: 64, cgroup: "/nonexistent/cgroup" } }))
      assert.strictEqual(error.method, "make")
      assert.strictEqual(
        error.message,
        "Cannot confine commands: maxProcesses needs a writable cgroup with the pids controller, and /nonexistent/cgroup does not exist"
      )
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("fails closed: a bubblewrap that is not there fails the build, naming it and how to install it", () =>
    Effect.gen(function*() {
      const at = yield* layout
      const error = yield* Effect.flip(LocalSandbox.make({ cwd: at.project, confine: { bwrap: "/nonexistent/bwrap" } }))
      assert.strictEqual(error.method, "make")
      assert.strictEqual(error.reason._tag, "Failed")
      assert.strictEqual(
        error.message,
        "Cannot confine commands: /nonexistent/bwrap is not installed: no executable file there; " +
          "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
      )
    }).pipe(Effect.scoped, Effect.provide(host)))

  it.effect("fails closed: no bwrap on the program's PATH fails the build with the same typed error, before any shell says `bwrap: not found`", () =>
    Effect.gen(function*() {
      const at = yield* layout
      // A PATH with every other tool the build uses (bash, its shell's commands), and no bwrap.
      const bin = join(at.root, "bin")
      mkdirSync(bin)
      for (const tool of ["bash", "sh", "true"]) symlinkSync(execFileSync("bash", ["-c", `command -v ${tool}`], { encoding: "utf8" }).trim(), join(bin, tool))
      const path = `${bin}:/nonexistent`
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const saved = process.env["PATH"]
          process.env["PATH"] = path
          return saved
        }),
        (saved) => Effect.sync(() => void (process.env["PATH"] = saved))
      )
      const error = yield* Effect.flip(LocalSandbox.make({ cwd: at.project, confine: true }))
      assert.strictEqual(error.method, "make")
      assert.strictEqual(error.reason._tag, "Failed")
      assert.strictEqual(
        error.message,
        `Cannot confine commands: bwrap is not installed: no bwrap on the PATH (${path}); ` +
          "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
      )
    }).pipe(Effect.scoped, Effect.provide(host)))
})
