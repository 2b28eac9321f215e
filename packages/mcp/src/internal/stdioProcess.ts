/**
 * stdioProcess — the MCP SDK's `Transport` over a server process that leads its own process group.
 *
 * The SDK's `StdioClientTransport` signals only its direct child, so a server started through
 * `npx`, `uvx` or `sh -c` leaves its real process (a grandchild) behind. This transport spawns the
 * server detached, as the leader of a new group, and its `close` ends the whole group: stdin EOF,
 * then SIGTERM to the group after `CLOSE_GRACE_MS`, SIGKILL after as long again, and the exit is
 * awaited; once the leader is gone the group gets SIGKILL anyway, so no grandchild survives it.
 * Framing is jsonLines' (one JSON-RPC message per line; the messages sent in one turn go out in
 * one write). A line that is not JSON-RPC is reported through `onerror` with the line's start, so a
 * connection still initialising can fail with it. A line longer than `maxMessageBytes` is reported
 * the same way when it passes the limit, skipped to its end without being held, and, when its
 * edges show the id of the response it was, that request gets an error response in its place
 * (oversized): the call fails, the server stays up.
 * This is the one module of @condukt/mcp that calls node:child_process and process.kill.
 */
import { type ChildProcess, spawn } from "node:child_process"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { Deferred, Effect } from "effect"
import { Batch, type Handlers, LineReader, parse } from "./jsonLines.ts"
import { type Skipped, tooLarge } from "./oversized.ts"

/** Between stdin EOF and SIGTERM, and between SIGTERM and SIGKILL. */
export const CLOSE_GRACE_MS = 1000

/** What a server wrote to stderr last, kept to explain why it died (bytes). */
const STDERR_TAIL_BYTES = 2048

/** The host variables a server sees besides those its declaration passes (as the SDK's default). */
const HOST_VARIABLES = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"] as const

export interface Options {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string | undefined
  /** Added to the host variables above. */
  readonly env: Readonly<Record<string, string>>
  /** The longest line read from the server's stdout (bytes). */
  readonly maxMessageBytes: number
}

/** The value of a host environment variable (pass-through names of a declaration). */
export const hostVariable = (name: string): string | undefined => process.env[name]

const signalGroup = (pgid: number, signal: NodeJS.Signals): boolean => {
  try {
    process.kill(-pgid, signal)
    return true
  } catch {
    // ESRCH: nobody is left in the group.
    return false
  }
}

/** A running server process as an SDK transport; `pid` is also its group id. */
export class StdioProcess implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  pid: number | undefined
  /** Why the spawn failed (ENOENT, EACCES…), when it did. */
  spawnError: NodeJS.ErrnoException | undefined
  /** The leader's exit code (or 128 + signal), once it exited. */
  readonly exited = Deferred.makeUnsafe<number>()
  private child: ChildProcess | undefined
  private readonly lines: LineReader
  private readonly batch = new Batch()
  private stderrTail = ""
  private readonly options: Options

  constructor(options: Options) {
    this.options = options
    this.lines = new LineReader(options.maxMessageBytes)
  }

  /** The last line the server wrote to stderr, if any. */
  get lastError(): string {
    return this.stderrTail.trimEnd().split("\n").at(-1) ?? ""
  }

  start(): Promise<void> {
    return Effect.runPromise(Effect.callback<void, Error>((resume) => {
      const env: Record<string, string> = {}
      for (const name of HOST_VARIABLES) {
        const value = process.env[name]
        if (value !== undefined) env[name] = value
      }
      const child = spawn(this.options.command, [...this.options.args], {
        cwd: this.options.cwd,
        env: { ...env, ...this.options.env },
        detached: true,
        stdio: ["pipe", "pipe", "pipe"]
      })
      this.child = child
      this.pid = child.pid
      child.once("error", (error: NodeJS.ErrnoException) => {
        this.spawnError = error
        resume(Effect.fail(error))
      })
      child.once("spawn", () => resume(Effect.void))
      child.once("exit", (code, signal) => {
        // Nothing the server started may outlive it.
        if (this.pid !== undefined) signalGroup(this.pid, "SIGKILL")
        Deferred.doneUnsafe(this.exited, Effect.succeed(code ?? 128 + (signal === null ? 0 : 15)))
      })
      child.once("close", () => this.onclose?.())
      child.stdout?.on("data", (chunk: Buffer) => this.receive(chunk))
      child.stderr?.on("data", (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_BYTES)
      })
      // A broken pipe shows as the process's exit; unhandled, it would crash the host.
      child.stdin?.on("error", () => {})
      child.stdout?.on("error", () => {})
      child.stderr?.on("error", () => {})
    }))
  }

  private receive(chunk: Buffer): void {
    this.lines.read(chunk, this.handlers)
  }

  private readonly handlers: Handlers = {
    line: (line) => {
      const message = parse(line)
      if (typeof message === "string") {
        this.onerror?.(new Error(`the server wrote something that is not JSON-RPC on stdout (${message.slice(0, 120)})`))
      } else {
        this.onmessage?.(message)
      }
    },
    skipping: () => {
      this.onerror?.(new Error(`the server wrote a line longer than ${this.options.maxMessageBytes} bytes on stdout (maxMessageBytes)`))
    },
    skipped: (line: Skipped) => {
      const id = line.id()
      if (id !== undefined) this.onmessage?.(tooLarge(id, this.options.maxMessageBytes))
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin
    if (stdin === undefined || stdin === null || stdin.destroyed) return Promise.reject(new Error("the server's stdin is closed"))
    // Concurrent calls send in bursts: one write (one syscall) per burst, not one per message.
    if (this.batch.add(message)) queueMicrotask(this.flush)
    return Promise.resolve()
  }

  private readonly flush = (): void => {
    const text = this.batch.take()
    const stdin = this.child?.stdin
    // A server gone meanwhile: its close fails the pending requests.
    if (text !== undefined && stdin !== undefined && stdin !== null && !stdin.destroyed && !stdin.writableEnded) stdin.write(text)
  }

  /** EOF, SIGTERM to the group, SIGKILL; resolves once the leader has exited and the group is killed. */
  close(): Promise<void> {
    return Effect.runPromise(this.terminate)
  }

  readonly terminate: Effect.Effect<void> = Effect.suspend(() => {
    const pid = this.pid
    if (this.child === undefined || pid === undefined) return Effect.void
    const exited = Deferred.await(this.exited)
    if (Deferred.isDoneUnsafe(this.exited)) return Effect.sync(() => signalGroup(pid, "SIGKILL"))
    // What was sent in this turn (a cancellation) still reaches the server before its EOF.
    this.flush()
    this.child.stdin?.end()
    return exited.pipe(
      Effect.timeoutOption(CLOSE_GRACE_MS),
      Effect.flatMap((done) =>
        done._tag === "Some" ? Effect.void : Effect.andThen(
          Effect.sync(() => signalGroup(pid, "SIGTERM")),
          Effect.timeoutOption(exited, CLOSE_GRACE_MS)
        )
      ),
      Effect.andThen(Effect.sync(() => signalGroup(pid, "SIGKILL"))),
      Effect.andThen(exited),
      Effect.asVoid
    )
  })
}
