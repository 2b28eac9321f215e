/**
 * NetworkProxy — the host side of a confined command's network allow list
 * (`Confine.Options.network: { allow }`).
 *
 * The command has no network of its own: only its namespace's loopback, where a forwarder (Node,
 * started inside the sandbox before the command) listens and hands every connection it accepts to
 * this process over the run's IPC channel, as a socket descriptor (no Unix socket is created
 * inside, which the seccomp filter would refuse). Here each connection is an HTTP proxy client:
 * `CONNECT host:port` (HTTPS, any TCP) or a request in absolute form (`GET http://host/…`) to a
 * host on the list is carried out; any other host is answered `403 Forbidden` with a body saying
 * so. The command finds the proxy through `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` (and their
 * lower-case forms); a program that ignores them reaches nothing.
 *
 * An entry is `host` (any port), `host:port`, or `*.domain` (its subdomains, any port); names
 * compare without case. The name the command asks for is the one checked and connected to.
 */
import type * as http from "node:http"
import * as net from "node:net"

/** @since 0.1.0 @category models */
export interface Proxy {
  /** The entries, as given. */
  readonly allow: ReadonlyArray<string>
  /**
   * Serves one connection the forwarder handed over (a `net.Socket`; typed `unknown` so that the
   * package's declarations need no Node types in a program that has none).
   */
  readonly accept: (socket: unknown) => void
}

/** `host:port` split, brackets of an IPv6 literal removed; the port is undefined when absent. */
const split = (authority: string): { readonly host: string; readonly port: number | undefined } => {
  const match = /^\[([^\]]+)\](?::(\d+))?$/.exec(authority) ?? /^([^:]+)(?::(\d+))?$/.exec(authority)
  return match === null
    ? { host: authority.toLowerCase(), port: undefined }
    : { host: match[1]!.toLowerCase(), port: match[2] === undefined ? undefined : Number(match[2]) }
}

/**
 * Whether `host` on `port` is on the list.
 *
 * @since 0.1.0
 * @category predicates
 */
export const allows = (allow: ReadonlyArray<string>, host: string, port: number): boolean =>
  allow.some((entry) => {
    const wanted = split(entry)
    if (wanted.port !== undefined && wanted.port !== port) return false
    const name = host.toLowerCase()
    return wanted.host.startsWith("*.") ? name.endsWith(wanted.host.slice(1)) : name === wanted.host
  })

const refusal = (allow: ReadonlyArray<string>, target: string): string =>
  `Blocked by the sandbox's network allow list: ${target} is not on it (allowed: ${allow.join(", ")})\n`

const refuse = (socket: net.Socket, allow: ReadonlyArray<string>, target: string): void => {
  const body = refusal(allow, target)
  socket.end(
    `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

const badGateway = (socket: net.Socket, target: string, error: Error): void => {
  const body = `Cannot reach ${target}: ${error.message}\n`
  socket.end(`HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
}

/**
 * A proxy for `allow`. It listens nowhere: connections come from `accept`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (allow: ReadonlyArray<string>): Proxy => {
  // Loaded here, not with the module: every program that imports this package (the CLI's `check`
  // among them) would otherwise load Node's HTTP stack at start.
  const http = process.getBuiltinModule("node:http")
  const server = http.createServer((request, response) => {
    let url: URL
    try {
      url = new URL(request.url ?? "")
    } catch {
      response.writeHead(400, { "Content-Type": "text/plain; charset=utf-8" }).end("A proxy request names its target in full: http://host/path\n")
      return
    }
    const port = url.port === "" ? 80 : Number(url.port)
    if (url.protocol !== "http:" || !allows(allow, url.hostname.replace(/^\[|\]$/g, ""), port)) {
      response.writeHead(403, { "Content-Type": "text/plain; charset=utf-8" }).end(refusal(allow, url.host))
      return
    }
    const upstream = http.request(
      {
        host: url.hostname.replace(/^\[|\]$/g, ""),
        port,
        method: request.method,
        path: `${url.pathname}${url.search}`,
        // The proxy's own headers (`Proxy-Connection`, `Proxy-Authorization`) are not the host's.
        headers: Object.fromEntries(Object.entries(request.headers).filter(([name]) => !name.startsWith("proxy-")))
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(response)
      }
    )
    upstream.on("error", (error) => {
      if (response.headersSent) response.destroy()
      else response.writeHead(502, { "Content-Type": "text/plain; charset=utf-8" }).end(`Cannot reach ${url.host}: ${error.message}\n`)
    })
    // The command gone (its sandbox's socket closed) ends the request to the host too.
    response.on("close", () => upstream.destroy())
    request.pipe(upstream)
  })
  server.on("connect", (request: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    const target = request.url ?? ""
    const { host, port } = split(target)
    socket.on("error", () => socket.destroy())
    if (port === undefined || !allows(allow, host, port)) return refuse(socket, allow, target)
    let connected = false
    const upstream = net.connect(port, host, () => {
      connected = true
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n")
      if (head.length > 0) upstream.write(head)
      upstream.pipe(socket)
      socket.pipe(upstream)
    })
    upstream.on("error", (error) => (connected ? socket.destroy() : badGateway(socket, target, error)))
    socket.on("close", () => upstream.destroy())
  })
  server.on("clientError", (_error, socket) => socket.destroy())
  return {
    allow,
    accept: (handle) => {
      if (!(handle instanceof net.Socket)) return
      const socket = handle
      socket.on("error", () => socket.destroy())
      server.emit("connection", socket)
      socket.resume()
    }
  }
}
