/** Shared by the MCP tests: the servers' paths, a free port, an HTTP server process ready to serve. */
import { Deferred, Effect, Scope, Stream } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import { McpServer as SdkServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import * as path from "node:path"
import { Agent, Session, type SessionEvent } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { FreePort, Processes, TestModel } from "@condukt/testing"
import { McpServer } from "../src/index.ts"

export const node = process.execPath
export const fixture = path.resolve(import.meta.dirname, "fixtures/server.ts")
export const hostile = path.resolve(import.meta.dirname, "fixtures/hostile.ts")
export const everything = path.resolve(import.meta.dirname, "../node_modules/@modelcontextprotocol/server-everything/dist/index.js")

/** A port nothing listens on, for a server process started on it (FreePort: outside the ephemeral range). */
export const freePort: Effect.Effect<number> = FreePort.make

/** server-everything over an HTTP transport on a free port, killed with the scope. */
export const everythingHttp = (transport: "sse" | "streamableHttp"): Effect.Effect<number, never, Scope.Scope> =>
  Effect.gen(function*() {
    const port = yield* freePort
    const ready = yield* Deferred.make<void>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(node, [everything, transport], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] })),
      (child) => Effect.sync(() => child.kill("SIGKILL"))
    )
    const watch = (chunk: Buffer) => {
      if (/running on port|listening on port/i.test(chunk.toString())) Deferred.doneUnsafe(ready, Effect.void)
    }
    child.stderr.on("data", watch)
    child.stdout.on("data", watch)
    yield* Deferred.await(ready)
    return port
  })

/** A session on TestModel with `servers`, running `replies` for one prompt: the run's events. */
export const runWith = (servers: ReadonlyArray<McpServer.McpServer>, replies: ReadonlyArray<TestModel.Reply>) =>
  Effect.gen(function*() {
    const agent = Agent.make({ name: "mcp", model: "test:x", mcpServers: servers })
    const session = yield* Session.start(agent)
    const events = yield* Stream.runCollect(session.stream("go"))
    return { session, events: Array.from(events) }
  }).pipe(Effect.provide(TestModel.layer(replies)), Effect.provide(Condukt.layer))

export const results = (events: ReadonlyArray<SessionEvent.SessionEvent>) =>
  events.flatMap((e) => (e._tag === "ToolResult" ? [{ name: e.name, content: e.content, isError: e.isError }] : []))

/** A Node process run to its end (killed with the scope if it is still running): its exit code and output. */
export const runNode = (args: ReadonlyArray<string>): Effect.Effect<{ code: number | null; stdout: string; stderr: string }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(node, [...args], { stdio: ["ignore", "pipe", "pipe"] })),
      (child) => Effect.sync(() => child.kill("SIGKILL"))
    )
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString()
    })
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    const code = yield* Effect.callback<number | null>((resume) => {
      child.once("close", (code) => resume(Effect.succeed(code)))
    })
    return { code, stdout, stderr }
  })

/** A loopback Streamable HTTP server (stateless) that accepts only the tokens in `accept`, and a token endpoint. */
export const protectedServer = Effect.acquireRelease(
  Effect.callback<{ url: string; seen: Array<string>; issued: Array<string>; accept: Set<string>; server: http.Server }>((resume) => {
    const seen: Array<string> = []
    const issued: Array<string> = []
    const accept = new Set<string>()
    const server = http.createServer((req, res) => {
      if (req.url === "/token") {
        const token = `token-${issued.length + 1}`
        issued.push(req.headers.authorization ?? "")
        accept.add(token)
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ access_token: token, token_type: "Bearer" }))
        return
      }
      const token = (req.headers.authorization ?? "").replace(/^Bearer /, "")
      seen.push(token)
      if (!accept.has(token)) {
        res.writeHead(401).end()
        return
      }
      const mcp = new SdkServer({ name: "protected", version: "1.0.0" })
      mcp.registerTool("whoami", { description: "Who the caller is" }, () => ({ content: [{ type: "text", text: `caller with ${token}` }] }))
      const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true })
      void mcp.connect(transport).then(() => transport.handleRequest(req, res))
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as { port: number }
      resume(Effect.succeed({ url: `http://127.0.0.1:${address.port}`, seen, issued, accept, server }))
    })
  }),
  ({ server }) => Effect.callback<void>((resume) => {
    server.closeAllConnections()
    server.close(() => resume(Effect.void))
  })
)

/** A file of /proc, or "" when its process has gone meanwhile (the machine runs others' processes too). */
const procFile = (path: string): string => {
  try {
    return fs.readFileSync(path, "utf8")
  } catch {
    return ""
  }
}

/** The processes under this one (any depth) whose command line names `needle`. */
export const descendants = (needle: string): ReadonlyArray<number> => {
  const parents = new Map<number, number>()
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = procFile(`/proc/${entry}/stat`)
    if (stat !== "") parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
  }
  const under = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === process.pid) return true
    return false
  }
  return [...parents.keys()].filter((pid) => {
    if (!under(pid)) return false
    return procFile(`/proc/${pid}/cmdline`).includes(needle)
  })
}

/** What one of this process's descriptors is, or "" when it was closed meanwhile. */
const fdTarget = (fd: string): string => {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`)
  } catch {
    return ""
  }
}

/** This process's open sockets (from /proc/self/fd). */
export const sockets = (): number => fs.readdirSync("/proc/self/fd").filter((fd) => fdTarget(fd).startsWith("socket:")).length

/** This process's open file descriptors (from /proc/self/fd; the directory's own read counts in every reading alike). */
export const fds = (): number => fs.readdirSync("/proc/self/fd").length

/** Polls (bounded: 15 s) until `read` gives `count`; fails saying how many `what` are open. */
const awaitCount = (read: () => number, count: number, what: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 300; attempt++) {
      if (read() === count) return
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.fail(`${read()} ${what} are open, ${count} before`)
  })

/** Polls (bounded: 15 s) until this process holds `count` sockets; fails with how many it holds. */
export const awaitSockets = (count: number) => awaitCount(sockets, count, "sockets")

/** Polls (bounded: 15 s) until this process holds `count` file descriptors; fails with how many it holds. */
export const awaitFds = (count: number) => awaitCount(fds, count, "file descriptors")

/**
 * server-everything over `transport`, its declaration `options` plus how to reach it, driven by
 * `answered` and checked by `check`; then the session stops and nothing is left: over stdio its
 * one process ends, over Streamable HTTP this process holds the sockets it held before (idle
 * keep-alive connections of the platform's fetch pool close when the server's keep-alive timeout,
 * 5 s, ends them; a stream or a session the client left open would stay).
 */
export const everythingLeavesNothing = <A extends { readonly session: Session.Session }, E, R>(
  transport: "stdio" | "streamableHttp",
  options: McpServer.CommonOptions,
  answered: (server: McpServer.McpServer) => Effect.Effect<A, E, R>,
  check: (outcome: A) => void
): Effect.Effect<void, E | string, R> =>
  Effect.gen(function*() {
    if (transport === "stdio") {
      const outcome = yield* answered(McpServer.stdio({ ...options, command: node, args: [everything, "stdio"] }))
      check(outcome)
      const pids = descendants(everything)
      if (pids.length !== 1) return yield* Effect.fail(`${pids.length} server-everything processes run, one expected`)
      yield* outcome.session.stop
      return yield* Effect.forEach(pids, (pid) => Processes.awaitDeath(pid), { discard: true })
    }
    const port = yield* everythingHttp("streamableHttp")
    const before = sockets()
    const outcome = yield* answered(McpServer.http({ ...options, url: `http://127.0.0.1:${port}/mcp` }))
    check(outcome)
    yield* outcome.session.stop
    yield* awaitSockets(before)
  }).pipe(Effect.scoped)
