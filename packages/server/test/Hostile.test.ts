/**
 * Hostile clients on a real port: a 100 MB body (declared or chunked) is a 413 and the connection
 * is closed before the rest is read (through a mounted web handler, the rest is never pulled);
 * 10,000 headers (or just more than `maxHeaders`) are a 431; a slow-loris client sending its
 * headers (or its body) a byte at a time is answered 408 and closed; 10,000 streams from one
 * principal leave `streamsPerPrincipal` open (they go on working) and answer the rest 429;
 * malformed JSON and a `Last-Event-ID` of `-1`, `1e309` or text are a 400 that says what is wrong;
 * past its burst a principal gets 429s. All the while another principal's requests are answered.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import * as Agent from "@condukt/core/Agent"
import * as Sandbox from "@condukt/core/Sandbox"
import { request } from "node:http"
import { connect } from "node:net"
import { Auth, type Limits, Server } from "../src/index.ts"

const agent = Agent.make({ name: "ops", model: "test:x", tools: [] })

const MB = 1024 * 1024

/** A server whose limits are `limits` (for the listener and the routes alike). */
const serve = (limits: Limits.Limits, replies: ReadonlyArray<TestModel.Reply> = []) =>
  Server.listen(Server.layer({ agents: { ops: agent }, auth: Auth.bearer({ "tok-mallory": "mallory", "tok-bob": "bob" }), defaultAgent: "ops", limits }), { limits }).pipe(
    Effect.provide(Layer.mergeAll(TestModel.layer(replies), Sandbox.layerNoop()))
  )

/** A request and its answer, the body as text. */
const call = (url: string, path: string, init: { method?: string; token?: string; body?: string; headers?: Record<string, string> } = {}) =>
  Effect.promise(async () => {
    const headers: Record<string, string> = { ...init.headers }
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`
    if (init.body !== undefined) headers["content-type"] ??= "application/json"
    const response = await fetch(url + path, { method: init.method ?? (init.body === undefined ? "GET" : "POST"), headers, ...(init.body === undefined ? {} : { body: init.body }) })
    return { status: response.status, body: await response.text() }
  })

/** Bob's ordinary request, made while mallory is at it: answered. */
const bobMeanwhile = (url: string) => call(url, "/sessions", { token: "tok-bob" })

const error = (tag: string, message: string) => JSON.stringify({ _tag: tag, message })

/**
 * POSTs `total` bytes to `path`, 64 KiB at a time, declared up front or chunked, writing on after
 * the answer comes: the answer, and how much was written when the server closed the connection.
 */
const upload = (port: number, path: string, total: number, declared: boolean) =>
  Effect.promise(() =>
    new Promise<{ status: number | undefined; body: string; sent: number }>((resolve) => {
      const chunk = Buffer.alloc(64 * 1024, "x")
      const req = request({
        host: "127.0.0.1",
        port,
        method: "POST",
        path,
        headers: { authorization: "Bearer tok-mallory", "content-type": "application/json", ...(declared ? { "content-length": String(total) } : {}) }
      })
      let sent = 0
      let closed = false
      let answer: { status: number | undefined; body: string } | undefined
      const settle = () => answer !== undefined && closed && resolve({ ...answer, sent })
      req.on("response", (res) => {
        let body = ""
        res.setEncoding("utf8").on("data", (text: string) => void (body += text)).on("end", () => {
          answer = { status: res.statusCode, body }
          settle()
        })
      })
      req.on("error", () => {})
      req.on("close", () => {
        closed = true
        settle()
      })
      const pump = () => {
        while (!closed && !req.destroyed && sent < total) {
          sent += chunk.length
          if (!req.write(chunk)) return void req.once("drain", pump)
        }
        if (sent >= total) req.end()
      }
      pump()
    })
  )

/**
 * Sends `head` on a raw connection, its first `atOnce` bytes at once and the rest `pace` ms apart
 * (all at once when `pace` is 0): what came back before the server closed, and how many bytes of
 * `head` were sent by then.
 */
const raw = (port: number, head: string, pace = 0, atOnce = 0) =>
  Effect.promise(() =>
    new Promise<{ answer: string; sent: number }>((resolve) => {
      const socket = connect(port, "127.0.0.1")
      let answer = ""
      let sent = 0
      let timer: ReturnType<typeof setInterval> | undefined
      socket.setEncoding("utf8").on("data", (text: string) => void (answer += text))
      socket.on("error", () => {})
      socket.on("close", () => {
        clearInterval(timer)
        resolve({ answer, sent })
      })
      socket.on("connect", () => {
        if (pace === 0) {
          sent = head.length
          return void socket.write(head)
        }
        sent = atOnce
        socket.write(head.slice(0, atOnce))
        timer = setInterval(() => {
          if (sent < head.length && socket.writable) socket.write(head[sent++]!)
        }, pace)
      })
    })
  )

/** A raw HTTP answer as its status and body (`content-length` bodies). */
const parsed = (answer: string) => ({ status: Number(answer.slice(9, 12)), body: answer.slice(answer.indexOf("\r\n\r\n") + 4) })

describe("Hostile", () => {
  it.live("a 100 MB body is refused 413 and its connection closed before the rest is read, declared or chunked", () =>
    Effect.gen(function*() {
      const { port, url } = yield* serve({})
      const tooLarge = error("PayloadTooLarge", `the request body is larger than ${MB} bytes`)
      for (const declared of [true, false]) {
        const abuse = yield* Effect.forkChild(upload(port, "/sessions", 100 * MB, declared))
        assert.strictEqual((yield* bobMeanwhile(url)).status, 200)
        const { body, sent, status } = yield* Fiber.join(abuse)
        assert.deepStrictEqual({ status, body, closedBeforeAllWasSent: sent < 100 * MB }, { status: 413, body: tooLarge, closedBeforeAllWasSent: true })
      }
    }), { timeout: 60_000 })

  it.live("mounted as a web handler, a 100 MB body is refused 413 once past the bound, the rest never read", () =>
    Effect.gen(function*() {
      const web = yield* Server.handler(Server.layer({ agents: { ops: agent }, auth: Auth.bearer({ "tok-mallory": "mallory" }), defaultAgent: "ops" })).pipe(
        Effect.provide(Layer.mergeAll(TestModel.layer([]), Sandbox.layerNoop()))
      )
      let pulled = 0
      const chunk = new Uint8Array(64 * 1024).fill(32)
      const body = new ReadableStream<Uint8Array>({
        pull: (controller) => {
          if (pulled >= 100 * MB) return controller.close()
          pulled += chunk.length
          controller.enqueue(chunk)
        }
      })
      const headers = { authorization: "Bearer tok-mallory", "content-type": "application/json" }
      const init: RequestInit & { duplex: "half" } = { method: "POST", headers, body, duplex: "half" }
      const answer = yield* Effect.promise(async () => {
        const response = await web(new Request("http://server.test/sessions", init))
        return { status: response.status, body: await response.text() }
      })
      assert.deepStrictEqual({ ...answer, readAll: pulled >= 100 * MB }, { status: 413, body: error("PayloadTooLarge", `the request body is larger than ${MB} bytes`), readAll: false })
    }))

  it.live("10,000 headers are a 431, and so are a few more than maxHeaders, and a 20 KB path; what is not HTTP is a 400", () =>
    Effect.gen(function*() {
      const { port, url } = yield* serve({})
      const many = (count: number) =>
        `GET /sessions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer tok-mallory\r\n${Array.from({ length: count }, (_, i) => `x-${i}: 1\r\n`).join("")}\r\n`
      const tooLarge = { status: 431, body: error("HeadersTooLarge", "the request's headers are too large: at most 100 headers of 16384 bytes in all") }
      assert.deepStrictEqual(parsed((yield* raw(port, many(10_000))).answer), tooLarge)
      assert.deepStrictEqual(parsed((yield* raw(port, many(120))).answer), tooLarge)
      const longPath = `GET /sessions/${"x".repeat(20_000)} HTTP/1.1\r\nhost: x\r\n\r\n`
      assert.deepStrictEqual(parsed((yield* raw(port, longPath)).answer), tooLarge)
      // Bytes that are not HTTP, and a request framed two ways at once (a smuggling attempt): 400.
      const notHttp = { status: 400, body: error("BadRequest", "the request is not well-formed HTTP") }
      assert.deepStrictEqual(parsed((yield* raw(port, "HELLO\r\n\r\n")).answer), notHttp)
      const twoWays = "POST /sessions HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n"
      assert.deepStrictEqual(parsed((yield* raw(port, twoWays)).answer), notHttp)
      const within = parsed((yield* raw(port, many(90).replace("HTTP/1.1\r\n", "HTTP/1.1\r\nconnection: close\r\n"))).answer)
      assert.deepStrictEqual(within, { status: 200, body: JSON.stringify({ sessions: [] }) })
      assert.strictEqual((yield* bobMeanwhile(url)).status, 200)
    }))

  it.live("slow-loris clients sending headers (or a body) a byte at a time are answered 408 and closed after the timeout", () =>
    Effect.gen(function*() {
      const limits = { headersTimeout: 300, requestTimeout: 2000 }
      const { port, url } = yield* serve(limits)
      const head = `GET /health HTTP/1.1\r\nhost: x\r\nx-slow: ${"a".repeat(4000)}\r\n\r\n`
      // And clients whose headers come at once but whose body comes a byte at a time.
      const slowBody = `POST /sessions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer tok-mallory\r\ncontent-type: application/json\r\ncontent-length: 4000\r\n\r\n`
      const loris = yield* Effect.forkChild(Effect.all([
        ...Array.from({ length: 20 }, () => Effect.map(raw(port, head, 10), (closed) => ({ ...closed, length: head.length }))),
        ...Array.from({ length: 5 }, () => Effect.map(raw(port, slowBody + " ".repeat(4000), 10, slowBody.length), (closed) => ({ ...closed, length: slowBody.length + 4000 })))
      ], { concurrency: "unbounded" }))
      assert.strictEqual((yield* bobMeanwhile(url)).status, 200)
      const closed = yield* Fiber.join(loris)
      const timedOut = error("RequestTimeout", "the request took too long to arrive (headers within 300 ms, the whole within 2000 ms)")
      assert.deepStrictEqual(
        closed.map(({ answer, length, sent }) => ({ ...parsed(answer), closedWhileSending: sent < length })),
        closed.map(() => ({ status: 408, body: timedOut, closedWhileSending: true }))
      )
    }), { timeout: 30_000 })

  it.live("10,000 streams from one principal: streamsPerPrincipal stay open and go on working, the rest are 429", () =>
    Effect.gen(function*() {
      const streamsPerPrincipal = 8
      const { url } = yield* serve({ streamsPerPrincipal, requestsPerSecond: 1_000_000, burst: 1_000_000 }, [TestModel.text("Still here.")])
      yield* call(url, "/sessions", { token: "tok-mallory", body: JSON.stringify({ id: "m1" }) })
      const open = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: streamsPerPrincipal }, async () => {
          const controller = new AbortController()
          const response = await fetch(`${url}/sessions/m1/events`, { headers: { authorization: "Bearer tok-mallory" }, signal: controller.signal })
          return { controller, status: response.status, reader: response.body!.pipeThrough(new TextDecoderStream()).getReader() }
        }))
      )
      assert.deepStrictEqual(open.map((stream) => stream.status), open.map(() => 200))
      const refused = yield* Effect.forEach(
        Array.from({ length: 10_000 - streamsPerPrincipal }),
        () => call(url, "/sessions/m1/events", { token: "tok-mallory" }),
        { concurrency: 100 }
      ).pipe(Effect.forkChild)
      assert.strictEqual((yield* bobMeanwhile(url)).status, 200)
      const answers = yield* Fiber.join(refused)
      const busy = error("TooManyRequests", `${streamsPerPrincipal} streams are open for you already (at most ${streamsPerPrincipal}): close one first`)
      assert.deepStrictEqual(new Set(answers.map((answer) => `${answer.status} ${answer.body}`)), new Set([`429 ${busy}`]))
      assert.strictEqual(answers.length, 10_000 - streamsPerPrincipal)

      // The open streams still carry the session's events: a run, each of them sees it to its end.
      const ran = yield* call(url, "/sessions/m1/runs", { token: "tok-mallory", body: JSON.stringify({ prompt: "hi" }) })
      assert.strictEqual(ran.status, 200)
      const last = JSON.parse(ran.body).lastEventId as number
      const seen = yield* Effect.promise(() =>
        Promise.all(open.map(async ({ controller, reader }) => {
          let text = ""
          while (!text.includes(`id: ${last}\n`)) text += (await reader.read()).value ?? ""
          controller.abort()
          return [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]))
        }))
      )
      assert.deepStrictEqual(seen, open.map(() => Array.from({ length: last }, (_, i) => i + 1)))
    }), { timeout: 60_000 })

  it.live("an id of up to 255 characters is addressable, a longer one is a 400 saying so, a path no route takes a 404 saying so", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({})
      const longest = "é".repeat(255)
      const started = yield* call(url, "/sessions", { token: "tok-mallory", body: JSON.stringify({ id: longest }) })
      const read = yield* call(url, `/sessions/${encodeURIComponent(longest)}`, { token: "tok-mallory" })
      assert.deepStrictEqual([started.status, read.status, JSON.parse(read.body).id], [201, 200, longest])
      const tooLong = yield* call(url, `/sessions/${"x".repeat(256)}/history`, { token: "tok-mallory" })
      assert.deepStrictEqual(tooLong, { status: 400, body: error("BadRequest", "malformed request path parameters: id: Expected a value with a length of at most 255") })
      const noRoute = error("NotFound", "no route for this method and path (GET /openapi.json lists them)")
      for (const [method, path] of [["GET", "/nothing/here"], ["DELETE", "/health"], ["GET", `/sessions/${"x".repeat(5000)}`]] as const) {
        assert.deepStrictEqual(yield* call(url, path, { method, token: "tok-mallory" }), { status: 404, body: noRoute }, `${method} ${path.slice(0, 30)}`)
      }
    }))

  it.live("malformed JSON and bodies of the wrong shape are a 400 saying what is wrong", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({})
      const cases = [
        ["/sessions", "{not json", "malformed request body: Expected a valid JSON body"],
        ["/sessions", "[1,2]", "malformed request body: Expected object"],
        ["/sessions", JSON.stringify({ id: 5 }), "malformed request body: id: Expected string"],
        ["/sessions", "[".repeat(MB - 1), "malformed request body: Expected a valid JSON body"],
        ["/sessions", JSON.stringify({ id: "x".repeat(300) }), "malformed request body: id: Expected a value with a length of at most 255"],
        ["/sessions/nope/runs", "", "malformed request body: Expected object"]
      ] as const
      for (const [path, body, message] of cases) {
        assert.deepStrictEqual(yield* call(url, path, { token: "tok-mallory", body }), { status: 400, body: error("BadRequest", message) }, `${path} ${body.slice(0, 20)}`)
      }
      assert.strictEqual((yield* bobMeanwhile(url)).status, 200)
    }))

  it.live("a Last-Event-ID of -1, 1e309, text or too many digits is a 400 saying what an event id is", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({})
      yield* call(url, "/sessions", { token: "tok-mallory", body: JSON.stringify({ id: "m1" }) })
      const notAnId = (value: string) => `Last-Event-ID must be the number of an event this server sent (digits only), not ${JSON.stringify(value)}`
      for (const value of ["-1", "1e309", "abc", "1.5", "+1", "0x1", "9".repeat(16)]) {
        const header = yield* call(url, "/sessions/m1/events", { token: "tok-mallory", headers: { "last-event-id": value } })
        const query = yield* call(url, `/sessions/m1/events?after=${encodeURIComponent(value)}`, { token: "tok-mallory" })
        const refused = { status: 400, body: error("BadRequest", notAnId(value)) }
        assert.deepStrictEqual([header, query], [refused, refused], value)
      }
      const long = yield* call(url, "/sessions/m1/events", { token: "tok-mallory", headers: { "last-event-id": "1".repeat(40) } })
      assert.deepStrictEqual(long, { status: 400, body: error("BadRequest", "malformed request headers: last-event-id: Expected a value with a length of at most 32") })
      const ahead = yield* call(url, "/sessions/m1/events", { token: "tok-mallory", headers: { "last-event-id": "7" } })
      assert.deepStrictEqual(ahead, { status: 400, body: error("BadRequest", "no event 7 was sent in this session yet (the last is 0)") })
    }))

  it.live("past its burst a principal's requests are 429, another principal's are not", () =>
    Effect.gen(function*() {
      // Next to nothing refills while the test runs: exactly the burst gets through.
      const { url } = yield* serve({ requestsPerSecond: 0.001, burst: 20 })
      const answers = yield* Effect.forEach(Array.from({ length: 40 }), () => call(url, "/sessions", { token: "tok-mallory" }), { concurrency: 8 })
      const limited = error("TooManyRequests", "too many requests (at most 0.001 a second, 20 at once): slow down")
      assert.deepStrictEqual(
        answers.map((answer) => answer.status).sort(),
        [...Array.from({ length: 20 }, () => 200), ...Array.from({ length: 20 }, () => 429)]
      )
      assert.deepStrictEqual(new Set(answers.filter((answer) => answer.status === 429).map((answer) => answer.body)), new Set([limited]))
      assert.strictEqual((yield* bobMeanwhile(url)).status, 200)
    }))
})
