/**
 * One declaration, two revisions (ADR 0069): a stateless 2026-07-28 server written for the test
 * (fixtures/revisions.ts) and a server that speaks only 2025-06-18, over Streamable HTTP and over
 * stdio. The client probes with `server/discover`: the first is spoken to statelessly (no
 * `initialize`, every request with its `_meta` envelope and `MCP-Protocol-Version` header), the
 * second through the `initialize` fallback. Nothing is left: the HTTP server has no open
 * connection once the session is closed, and the stdio server's process is gone.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as http from "node:http"
import type * as net from "node:net"
import * as path from "node:path"
import { Agent, Session } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { TestModel } from "@condukt/testing"
import { McpServer } from "../src/index.ts"
import { answer, type Message, type Revision } from "./fixtures/revisions.ts"
import { node, results } from "./support.ts"

const script = path.resolve(import.meta.dirname, "fixtures/revisions.ts")

interface Seen {
  readonly method: string
  readonly version: string | undefined
  readonly session: string | undefined
}

/** fixtures/revisions.ts over Streamable HTTP on loopback, speaking `revision`; what it was sent. */
const httpServer = (revision: Revision) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly seen: Array<Seen>; readonly server: http.Server; readonly open: Set<net.Socket> }>((resume) => {
      const seen: Array<Seen> = []
      const open = new Set<net.Socket>()
      const server = http.createServer((req, res) => {
        const version = req.headers["mcp-protocol-version"] as string | undefined
        const session = req.headers["mcp-session-id"] as string | undefined
        if (req.method !== "POST") {
          seen.push({ method: req.method!, version, session })
          res.writeHead(req.method === "DELETE" ? 200 : 405).end()
          return
        }
        let body = ""
        req.on("data", (chunk: Buffer) => {
          body += chunk.toString()
        })
        req.on("end", () => {
          const message = JSON.parse(body) as Message
          seen.push({ method: message.method ?? "response", version, session })
          const reply = answer(revision, message)
          if (reply === undefined) {
            res.writeHead(202).end()
            return
          }
          // A 2025 server keeps a session; a 2026-07-28 one has none.
          const headers = revision === "2025-06-18" && message.method === "initialize" ? { "mcp-session-id": "s-1" } : {}
          res.writeHead(200, { "content-type": "application/json", ...headers }).end(JSON.stringify(reply))
        })
      })
      // Idle sockets stay open until the client closes them (Node's default closes them after 5 s).
      server.keepAliveTimeout = 120_000
      server.on("connection", (socket: net.Socket) => {
        open.add(socket)
        socket.on("close", () => open.delete(socket))
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address() as { port: number }
        resume(Effect.succeed({ url: `http://127.0.0.1:${address.port}/mcp`, seen, server, open }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
  )

/**
 * Waits until every connection to the server has closed (the client closes its sockets with the
 * session; the server sees each close a moment later). A socket the client keeps open fails the
 * test at `CLOSED_WITHIN`, saying how many.
 */
const allClosed = (open: Set<net.Socket>) =>
  Effect.callback<void>((resume) => {
    const check = () => {
      if (open.size === 0) resume(Effect.void)
    }
    for (const socket of open) socket.once("close", () => queueMicrotask(check))
    check()
  }).pipe(
    Effect.timeoutOrElse({
      duration: CLOSED_WITHIN,
      orElse: () => Effect.die(new Error(`${open.size} connection(s) still open after the session closed`))
    })
  )

const CLOSED_WITHIN = "5 seconds"

/** One session with `server` that calls `tool` once: what it read. */
const callOnce = (server: McpServer.McpServer, tool: string, args: Readonly<Record<string, unknown>>) =>
  Effect.scoped(Effect.gen(function*() {
    const session = yield* Session.start(Agent.make({ name: "revisions", model: "test:x", mcpServers: [server] }))
    return results(Array.from(yield* Stream.runCollect(session.stream("go"))))
  })).pipe(
    Effect.provide(TestModel.layer([TestModel.toolCall(`rev.${tool}`, args), TestModel.text("done")])),
    Effect.provide(Condukt.layer)
  )

/** Whether a process of that id exists (signal 0 only checks). */
const alive = (pid: number): Effect.Effect<boolean> => Effect.isSuccess(Effect.try(() => process.kill(pid, 0)))

describe("one declaration, a 2026-07-28 server and a 2025-06-18 one", () => {
  it.live("Streamable HTTP: the stateless server without initialize, the 2025 one through it; no connection left", () =>
    Effect.gen(function*() {
      const modern = yield* httpServer("2026-07-28")
      const legacy = yield* httpServer("2025-06-18")
      const declare = (url: string) => McpServer.http({ name: "rev", url })

      assert.deepStrictEqual(yield* callOnce(declare(modern.url), "echo", { text: "hi" }), [
        { name: "rev.echo", content: "2026-07-28: hi", isError: false }
      ])
      assert.deepStrictEqual(modern.seen, [
        { method: "server/discover", version: "2026-07-28", session: undefined },
        { method: "tools/list", version: "2026-07-28", session: undefined },
        { method: "tools/call", version: "2026-07-28", session: undefined }
      ])
      yield* allClosed(modern.open)

      assert.deepStrictEqual(yield* callOnce(declare(legacy.url), "echo", { text: "hi" }), [
        { name: "rev.echo", content: "2025-06-18: hi", isError: false }
      ])
      assert.deepStrictEqual(legacy.seen.map((s) => s.method), [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "GET",
        "tools/list",
        "tools/call",
        "DELETE"
      ])
      // After the handshake, every request names the revision the server chose, on its session.
      assert.deepStrictEqual(legacy.seen.slice(2).map((s) => [s.version, s.session]), Array(5).fill(["2025-06-18", "s-1"]))
      yield* allClosed(legacy.open)
    }).pipe(Effect.scoped))

  it.live("stdio: the same two revisions through one declaration's form; each server's process is gone after", () =>
    Effect.gen(function*() {
      const declare = (revision: Revision) => McpServer.stdio({ name: "rev", command: node, args: [script, revision] })
      for (const revision of ["2026-07-28", "2025-06-18"] as const) {
        const [echo] = yield* callOnce(declare(revision), "echo", { text: "hi" })
        assert.deepStrictEqual(echo, { name: "rev.echo", content: `${revision}: hi`, isError: false })
        const [pid] = yield* callOnce(declare(revision), "pid", {})
        assert.isFalse(yield* alive(Number(pid!.content)))
      }
    }))
})
