/**
 * ChannelGuard: what a launcher taken over could send the host over Node's IPC channel — a line
 * that is not JSON (Node's reader throws where nothing catches it: the program dies), a line
 * without end (Node's reader keeps it all: the program's memory) — shown to get through where
 * nothing stops it, then cut off by the guard, the host unharmed. The host is a Node process of
 * its own, so that the unguarded one may die.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { join } from "node:path"

const GUARD = join(import.meta.dirname, "../../src/sandbox/ChannelGuard.ts")

/**
 * A host that spawns a child (a shell, whose descriptor 3 is its end of the IPC channel: blocking,
 * unlike a Node child's) writing `script`'s output raw onto the channel, then ending; `guarded`:
 * through `ChannelGuard.guard` (1 MiB). It prints what it saw.
 */
const host = (script: string, guarded: boolean) =>
  Effect.promise(() =>
    new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
      const program = `
        import { spawn } from "node:child_process"
        const child = spawn("bash", ["-c", ${JSON.stringify(`{ ${script}; } >&3`)}], { stdio: ["ignore", "inherit", "inherit", "ipc"] })
        child.on("message", (m) => console.log("message: " + JSON.stringify(m)))
        if (${guarded}) (await import(${JSON.stringify(GUARD)})).guard(child, 1024 * 1024, (why) => console.log("cut: " + why))
      `
      execFile(process.execPath, ["--input-type=module", "-e", program], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr }))
    })
  )

describe("ChannelGuard: a child's IPC channel bounded", () => {
  it.live("a line that is not JSON kills an unguarded host; guarded, the channel is cut and the host lives", () =>
    Effect.gen(function*() {
      const script = `printf '{"t":"out"}\\nnot json\\n'`
      const open = yield* host(script, false)
      assert.strictEqual(open.code, 1)
      assert.include(open.stderr, "SyntaxError")
      const guarded = yield* host(script, true)
      assert.deepStrictEqual({ code: guarded.code, stdout: guarded.stdout }, {
        code: 0,
        // The line before it was whole, and is delivered.
        stdout: `cut: sent a message that is not JSON (Unexpected token 'o', "not json" is not valid JSON)\nmessage: {"t":"out"}\n`
      })
    }))

  it.live("a line over the limit is taken whole by an unguarded host; guarded, the channel is cut at the limit", () =>
    Effect.gen(function*() {
      // 4 MiB, then a newline: the unguarded host keeps it all, then dies parsing it (printing its
      // first 128 KiB or so).
      const script = `head -c 4194304 /dev/zero | tr '\\0' x; printf '\\n{"t":"after"}\\n'`
      const open = yield* host(script, false)
      assert.strictEqual(open.code, 1)
      assert.include(open.stderr, `<anonymous_script>:1\n${"x".repeat(100_000)}`)
      const guarded = yield* host(script, true)
      assert.deepStrictEqual({ code: guarded.code, stdout: guarded.stdout }, { code: 0, stdout: "cut: sent a message over 1048576 characters\n" })
    }))
})
