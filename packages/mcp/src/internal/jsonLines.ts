/**
 * jsonLines — the stdio framing of MCP: one JSON-RPC message per line, in both directions.
 *
 * `LineReader` cuts the bytes a server writes into lines, holding at most its limit of an
 * unfinished one (a server that never ends its line cannot grow our memory): a longer line is
 * skipped to its end and reported with its edges (see oversized), the lines after it read as usual. `parse` turns a line
 * into a message after checking only the envelope (`jsonrpc: "2.0"` and a method, or an id): the
 * SDK's protocol validates every message it receives against the JSON-RPC schemas before it acts
 * on it, so a second full validation here (as the SDK's own `ReadBuffer` does) would only cost.
 * `Batch` joins the messages sent in one turn of the event loop into one write. Pure: no I/O.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/client"
import { Skipped } from "./oversized.ts"

/** The longest line a server may write by default (bytes), as the SDK's own stdio framing allows. */
export const MAX_LINE_BYTES = 10 * 1024 * 1024

const NEWLINE = 0x0a
const CARRIAGE_RETURN = 0x0d

/** What a reader reports: each line, and each line longer than its limit (skipped). */
export interface Handlers {
  readonly line: (line: string) => void
  /** An unfinished line has just passed the limit: it is being skipped. */
  readonly skipping: () => void
  /** A skipped line has ended: its edges, to find the id of the response it was. */
  readonly skipped: (line: Skipped) => void
}

/** Cuts a byte stream into lines; a line longer than `maxBytes` is skipped to its end, never held. */
export class LineReader {
  /** The pieces of a line whose end has not arrived yet, and their length. */
  private parts: Array<Buffer> = []
  private partBytes = 0
  /** The line being skipped, while one is. */
  private skipping: Skipped | undefined
  private readonly maxBytes: number

  constructor(maxBytes: number = MAX_LINE_BYTES) {
    this.maxBytes = maxBytes
  }

  /** Reports each line `chunk` completes (without its `\n` or `\r\n`), and each skipped line. */
  read(chunk: Buffer, on: Handlers): void {
    let start = 0
    let end = chunk.indexOf(NEWLINE)
    if (this.skipping !== undefined) {
      const skipped = this.skipping
      skipped.add(chunk.subarray(0, end === -1 ? chunk.length : end))
      if (end === -1) return
      this.skipping = undefined
      on.skipped(skipped)
      start = end + 1
      end = chunk.indexOf(NEWLINE, start)
    } else if (this.parts.length > 0 && end !== -1) {
      // Only the line that spans chunks is copied; the lines after it are read in place.
      const line = Buffer.concat([...this.parts, chunk.subarray(0, end)])
      this.parts = []
      this.partBytes = 0
      if (line.length > this.maxBytes) {
        const skipped = new Skipped()
        skipped.add(line)
        on.skipping()
        on.skipped(skipped)
      } else {
        on.line(lineOf(line, 0, line.length))
      }
      start = end + 1
      end = chunk.indexOf(NEWLINE, start)
    }
    while (end !== -1) {
      if (end - start > this.maxBytes) {
        const skipped = new Skipped()
        skipped.add(chunk.subarray(start, end))
        on.skipping()
        on.skipped(skipped)
      } else {
        on.line(lineOf(chunk, start, end))
      }
      start = end + 1
      end = chunk.indexOf(NEWLINE, start)
    }
    if (start === chunk.length) return
    this.parts.push(chunk.subarray(start))
    this.partBytes += chunk.length - start
    if (this.partBytes <= this.maxBytes) return
    // Past the limit: what came of the line is dropped (its edges kept), the rest skipped as it comes.
    const skipped = new Skipped()
    for (const part of this.parts) skipped.add(part)
    this.parts = []
    this.partBytes = 0
    this.skipping = skipped
    on.skipping()
  }
}

const lineOf = (bytes: Buffer, start: number, end: number): string =>
  bytes.toString("utf8", start, end > start && bytes[end - 1] === CARRIAGE_RETURN ? end - 1 : end)

/** A line's message, or why it is not one (the line's start, for the reader of an error). */
export const parse = (line: string): JSONRPCMessage | string => {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
  if (typeof value === "object" && value !== null && "jsonrpc" in value && value.jsonrpc === "2.0" && ("method" in value || "id" in value)) {
    // The envelope only: the protocol checks the whole message against its schemas on receipt.
    return value as JSONRPCMessage
  }
  return `not a JSON-RPC message: ${line.slice(0, 60)}`
}

/**
 * How much of a burst is held before it is written (characters): its first write as soon as a
 * kilobyte is held, so the server starts on the burst while the rest of it is made; the writes after
 * it in turns of 16 KiB, one system call for ~150 calls.
 */
export const FIRST_WRITE_CHARS = 1024
export const WRITE_CHARS = 16 * 1024

/**
 * The messages sent during one turn, joined into one write at its end, or sooner once enough are
 * held (`full`).
 */
export class Batch {
  private lines: Array<string> = []
  private chars = 0
  /** Whether this turn has written already (its next write waits for `WRITE_CHARS`). */
  private written = false

  /** Adds a message; true when it is the first of the batch (the caller schedules the flush). */
  add(message: JSONRPCMessage): boolean {
    const line = JSON.stringify(message)
    this.lines.push(line)
    this.chars += line.length + 1
    return this.lines.length === 1
  }

  /** Whether the batch holds enough to be written now, before its turn ends. */
  get full(): boolean {
    return this.chars >= (this.written ? WRITE_CHARS : FIRST_WRITE_CHARS)
  }

  /** The batch's text as written before its turn ends (`full`); the batch is empty afterwards. */
  takeEarly(): string | undefined {
    this.written = true
    return this.take()
  }

  /** The batch's text at the end of its turn; the next turn starts with a small first write. */
  takeAtEnd(): string | undefined {
    this.written = false
    return this.take()
  }

  /** The batch's text, each message on its own line (none when empty); the batch is empty afterwards. */
  private take(): string | undefined {
    if (this.lines.length === 0) return undefined
    const text = this.lines.length === 1 ? `${this.lines[0]}\n` : `${this.lines.join("\n")}\n`
    this.lines = []
    this.chars = 0
    return text
  }
}
