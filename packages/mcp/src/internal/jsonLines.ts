/**
 * jsonLines — the stdio framing of MCP: one JSON-RPC message per line, in both directions.
 *
 * `LineReader` cuts the bytes a server writes into lines, holding at most `MAX_LINE_BYTES` of an
 * unfinished one (a server that never ends its line cannot grow our memory). `parse` turns a line
 * into a message after checking only the envelope (`jsonrpc: "2.0"` and a method, or an id): the
 * SDK's protocol validates every message it receives against the JSON-RPC schemas before it acts
 * on it, so a second full validation here (as the SDK's own `ReadBuffer` does) would only cost.
 * `Batch` joins the messages sent in one turn of the event loop into one write. Pure: no I/O.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"

/** The longest line a server may write (bytes), as the SDK's own stdio framing allows. */
export const MAX_LINE_BYTES = 10 * 1024 * 1024

const NEWLINE = 0x0a
const CARRIAGE_RETURN = 0x0d

/** Cuts a byte stream into lines. */
export class LineReader {
  /** The pieces of a line whose end has not arrived yet, and their length. */
  private parts: Array<Buffer> = []
  private partBytes = 0

  /**
   * Calls `onLine` with each line `chunk` completes (without its `\n` or `\r\n`); false once the
   * unfinished line is longer than `MAX_LINE_BYTES` (its bytes are then dropped).
   */
  read(chunk: Buffer, onLine: (line: string) => void): boolean {
    let start = 0
    let end = chunk.indexOf(NEWLINE)
    if (this.parts.length > 0 && end !== -1) {
      // Only the line that spans chunks is copied; the lines after it are read in place.
      const line = Buffer.concat([...this.parts, chunk.subarray(0, end)])
      this.parts = []
      this.partBytes = 0
      onLine(lineOf(line, 0, line.length))
      start = end + 1
      end = chunk.indexOf(NEWLINE, start)
    }
    while (end !== -1) {
      onLine(lineOf(chunk, start, end))
      start = end + 1
      end = chunk.indexOf(NEWLINE, start)
    }
    if (start === chunk.length) return true
    this.parts.push(chunk.subarray(start))
    this.partBytes += chunk.length - start
    if (this.partBytes <= MAX_LINE_BYTES) return true
    this.parts = []
    this.partBytes = 0
    return false
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

/** The messages sent during one turn, joined into one write at its end. */
export class Batch {
  private lines: Array<string> = []

  /** Adds a message; true when it is the first of the batch (the caller schedules the flush). */
  add(message: JSONRPCMessage): boolean {
    this.lines.push(JSON.stringify(message))
    return this.lines.length === 1
  }

  /** The batch's text, each message on its own line (none when empty); the batch is empty afterwards. */
  take(): string | undefined {
    if (this.lines.length === 0) return undefined
    const text = this.lines.length === 1 ? `${this.lines[0]}\n` : `${this.lines.join("\n")}\n`
    this.lines = []
    return text
  }
}
