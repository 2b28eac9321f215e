/**
 * stdioProcess — the MCP SDK's `Transport` over a server process started by the program's
 * `ProcessRunner` (core), so a stdio server shares the one host variable list and the one group
 * kill every process of the program gets, and is tested against `@condukt/testing`'s scripted runner.
 *
 * The SDK's `StdioClientTransport` signals only its direct child, so a server started through
 * `npx`, `uvx` or `sh -c` leaves its real process (a grandchild) behind. Here the runner spawns the
 * server as the leader of a new group in a scope of the transport's own, a child of the
 * connection's scope; `close` closes it, which ends the whole group (stdin EOF, then SIGTERM, then
 * SIGKILL, `ProcessRunner.CLOSE_GRACE` apart) once the leader has exited.
 * Framing is jsonLines' (one JSON-RPC message per line; the messages sent in one turn go out in
 * one write). A line that is not JSON-RPC is reported through `onerror` with the line's start, so a
 * connection still initialising can fail with it. A line longer than `maxMessageBytes` is reported
 * the same way when it passes the limit, skipped to its end without being held, and, when its
 * edges show the id of the response it was, that request gets an error response in its place
 * (oversized): the call fails, the server stays up.
 */
import type { Transport } from "@modelcontextprotocol/client"
import type { JSONRPCMessage } from "@modelcontextprotocol/client"
import { Deferred, Effect, Exit, Scope } from "effect"
import type { ProcessRunner } from "@condukt/core"
import { Batch, type Handlers, LineReader, parse } from "./jsonLines.ts"
import { type Skipped, tooLarge } from "./oversized.ts"

/** What a server wrote to stderr last, kept to explain why it died (bytes). */
const STDERR_TAIL_BYTES = 2048

const decoder = new TextDecoder()

/** A running server process as an SDK transport. */
export class StdioProcess implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  /** Why the spawn failed, when it did. */
  spawnError: ProcessRunner.ProcessRunnerError | undefined
  /** The leader's exit code (or 128 + signal), once it exited. */
  readonly exited = Deferred.makeUnsafe<number>()
  /** The same, read synchronously: the process runner reports the exit before the pipes close (`onclose`). */
  exitCode: number | undefined
  /**
   * Not handed out: the tail is kept for errors (`lastError`). With `pid`, what the SDK tells a
   * stdio transport by, so that a server silent to the `server/discover` probe is a legacy one
   * (it falls back to `initialize`) rather than an outage (negotiation.ts).
   */
  readonly stderr = null
  private process: ProcessRunner.Process | undefined
  private scope: Scope.Closeable | undefined
  private readonly lines: LineReader
  private readonly batch = new Batch()
  private stderrTail = ""
  private readonly runner: ProcessRunner.Service
  /** The connection's scope: the server's group dies with it even if `close` never comes. */
  private readonly parent: Scope.Scope
  private readonly command: ProcessRunner.Command
  private readonly maxMessageBytes: number

  constructor(runner: ProcessRunner.Service, parent: Scope.Scope, command: ProcessRunner.Command, maxMessageBytes: number) {
    this.runner = runner
    this.parent = parent
    this.command = command
    this.maxMessageBytes = maxMessageBytes
    this.lines = new LineReader(maxMessageBytes)
  }

  /** The server's process id (its group's), once spawned. */
  get pid(): number | null {
    return this.process?.pid ?? null
  }

  /** The last line the server wrote to stderr, if any. */
  get lastError(): string {
    return this.stderrTail.trimEnd().split("\n").at(-1) ?? ""
  }

  start(): Promise<void> {
    const self = this
    return Effect.runPromise(Effect.gen(function*() {
      const scope = yield* Scope.fork(self.parent)
      self.scope = scope
      self.process = yield* self.runner.spawn(self.command, {
        // Node's runner hands over Buffers already; any other chunk is viewed as one, not copied.
        stdout: (chunk) =>
          self.lines.read(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength), self.handlers),
        stderr: (chunk) => {
          self.stderrTail = (self.stderrTail + decoder.decode(chunk)).slice(-STDERR_TAIL_BYTES)
        },
        exit: (exitCode) => {
          self.exitCode = exitCode
          Deferred.doneUnsafe(self.exited, Effect.succeed(exitCode))
        },
        close: () => self.onclose?.()
      }).pipe(
        Scope.provide(scope),
        Effect.tapError((error) =>
          Effect.andThen(Effect.sync(() => (self.spawnError = error)), Scope.close(scope, Exit.void))
        )
      )
    }))
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
      this.onerror?.(new Error(`the server wrote a line longer than ${this.maxMessageBytes} bytes on stdout (maxMessageBytes)`))
    },
    skipped: (line: Skipped) => {
      const id = line.id()
      if (id !== undefined) this.onmessage?.(tooLarge(id, this.maxMessageBytes))
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.process === undefined || Deferred.isDoneUnsafe(this.exited)) return Promise.reject(new Error("the server's stdin is closed"))
    // Concurrent calls send in bursts: a few writes (syscalls) per burst, not one per message, the
    // first of them small, so the server starts on a burst while the rest is made (`Batch`).
    if (this.batch.add(message)) queueMicrotask(this.flush)
    if (this.batch.full) this.write(this.batch.takeEarly())
    return Promise.resolve()
  }

  private readonly flush = (): void => this.write(this.batch.takeAtEnd())

  private write(text: string | undefined): void {
    // A server gone meanwhile: its close fails the pending requests.
    if (text !== undefined) this.process?.write(text)
  }

  /** EOF, SIGTERM to the group, SIGKILL; resolves once the leader has exited and the group is killed. */
  close(): Promise<void> {
    const scope = this.scope
    if (scope === undefined) return Promise.resolve()
    // What was sent in this turn (a cancellation) still reaches the server before its EOF.
    this.flush()
    return Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
