/**
 * The launcher's program (`Launcher`), run inside a confined sandbox by the program's own Node
 * (`node -e`), talking to the host over its IPC channel:
 *
 * - `{ t: "run", id, script, argv, cwd, env, max }`: spawns `bash -c script argv…` in `cwd` with
 *   `env` (plus the proxy's variables), as the leader of a process group of its own, stdin
 *   `/dev/null`, stdout and stderr merged; the shell first waits on descriptor 3 for the host's
 *   word (`go`), so it has forked nothing before the host has moved it into its control group.
 *   Answers `{ t: "started", id, pid }` (its pid in the sandbox), then `{ t: "out", id, data }`
 *   (base64; `max + 1` bytes at most, so the host sees a cut output as cut), then `{ t: "done",
 *   id, code }` once the shell has exited, its group killed and its pipes read to EOF (200 ms at
 *   most), or `{ t: "failed", id, code, message }` when it could not start;
 * - before a command starts while none runs, what earlier ones left in memory that would outlive
 *   them is removed: the files of `/dev/shm` (a bounded tmpfs of the sandbox's: `Confine.plan`) and
 *   the SysV shared memory, semaphores and message queues of its IPC namespace (`ipcrm --all`, when
 *   `/proc/sysvipc` lists any). `/tmp` is kept: it is the sandbox's, as a shell's is its host's;
 * - `{ t: "go", id }`: the shell may run the script; `{ t: "kill", id, signal }`: signals its group;
 * - with the argument `proxy`: listens on the namespace's loopback and hands each connection,
 *   unread, to the host (`{ t: "connection" }` with the socket: `NetworkProxy`), the commands
 *   finding it in `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and lower case), `NODE_USE_ENV_PROXY`;
 * - `{ t: "ready" }` once it takes commands; it exits when the host's channel closes.
 */
export const LAUNCHER = `"use strict"
const { spawn, spawnSync } = require("child_process")
const fs = require("fs")
const net = require("net")
const os = require("os")
const running = new Map()
let extra = {}
const send = (message, handle) => { if (process.connected) process.send(message, handle, () => {}) }
const ignore = () => {}
const listed = (file) => { try { return fs.readFileSync(file, "latin1").split("\\n").length > 2 } catch { return false } }
const clear = () => {
  try { for (const name of fs.readdirSync("/dev/shm")) fs.rmSync("/dev/shm/" + name, { recursive: true, force: true }) } catch {}
  if (["shm", "sem", "msg"].some((kind) => listed("/proc/sysvipc/" + kind))) {
    try { spawnSync("ipcrm", ["--all"], { stdio: "ignore", timeout: 5000 }) } catch {}
  }
}
const run = (m) => {
  if (running.size === 0) clear()
  let child
  try {
    child = spawn("bash", ["-c", "read -r _ <&3 || exit 125; exec 3<&- 2>&1; " + m.script, ...m.argv], {
      cwd: m.cwd, env: { ...m.env, ...extra }, detached: true, stdio: ["ignore", "pipe", "pipe", "pipe"]
    })
  } catch (error) {
    return send({ t: "failed", id: m.id, code: error.code, message: String(error.message) })
  }
  child.once("error", (error) => {
    if (running.get(m.id) === child) running.delete(m.id)
    const message = fs.existsSync(m.cwd) ? String(error.message) : "working directory " + m.cwd + " is not visible inside the sandbox"
    send({ t: "failed", id: m.id, code: error.code, message })
  })
  if (child.pid === undefined) return
  running.set(m.id, child)
  let sent = 0
  const out = (chunk) => {
    if (sent > m.max) return
    const piece = chunk.subarray(0, m.max + 1 - sent)
    sent += piece.length
    send({ t: "out", id: m.id, data: piece.toString("base64") })
  }
  for (const stream of [child.stdout, child.stderr, child.stdio[3]]) stream.on("error", ignore)
  child.stdout.on("data", out)
  child.stderr.on("data", out)
  child.once("exit", (code, signal) => {
    try { process.kill(-child.pid, "SIGKILL") } catch {}
    const status = code ?? 128 + (signal === null ? 0 : os.constants.signals[signal] ?? 0)
    const done = () => {
      clearTimeout(timer)
      if (running.get(m.id) !== child) return
      running.delete(m.id)
      send({ t: "done", id: m.id, code: status })
    }
    const timer = setTimeout(done, 200)
    child.once("close", done)
  })
  send({ t: "started", id: m.id, pid: child.pid })
}
process.on("message", (m) => {
  if (m === null || typeof m !== "object") return
  if (m.t === "run") return run(m)
  const child = running.get(m.id)
  if (child === undefined) return
  if (m.t === "go") child.stdio[3].end("\\n")
  else if (m.t === "kill") { try { process.kill(-child.pid, m.signal) } catch {} }
})
process.on("disconnect", () => {
  for (const child of running.values()) { try { process.kill(-child.pid, "SIGKILL") } catch {} }
  process.exit(0)
})
if (process.argv[1] === "proxy") {
  const server = net.createServer({ pauseOnConnect: true }, (socket) => send({ t: "connection" }, socket))
  server.listen(0, "127.0.0.1", () => {
    const url = "http://127.0.0.1:" + server.address().port
    extra = { HTTP_PROXY: url, HTTPS_PROXY: url, ALL_PROXY: url, http_proxy: url, https_proxy: url, all_proxy: url, NODE_USE_ENV_PROXY: "1" }
    send({ t: "ready" })
  })
} else send({ t: "ready" })
`
