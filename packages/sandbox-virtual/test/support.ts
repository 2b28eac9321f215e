/**
 * Shared by the package's tests: real temporary host directories (for mounts), a virtual sandbox
 * with the context a session would give a tool call, and the outcome of a failing call as plain data.
 */
import type { Sandbox } from "@condukt/core"
import { ToolCall } from "@condukt/testing"
import { Effect } from "effect"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import * as VirtualSandbox from "../src/VirtualSandbox.ts"

/** A real temporary directory holding `files` (relative path → content), removed with the scope. */
export const hostDir = (files: Readonly<Record<string, string | Uint8Array>> = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = realpathSync(mkdtempSync(join(tmpdir(), "condukt-virtual-")))
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true })
        writeFileSync(join(dir, path), content)
      }
      return dir
    }),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** The reason tag and message of the SandboxError an effect fails with. */
export const failure = <A, R>(effect: Effect.Effect<A, Sandbox.SandboxError, R>) =>
  Effect.map(Effect.flip(effect), (error) => ({ tag: error.reason._tag, message: error.message }))

/** A finished command's whole result. */
export const ran = (output: string, exitCode = 0): Sandbox.ExecResult => ({ output, exitCode, truncated: false })

/** A virtual sandbox and a tool context holding it. */
export const virtualContext = (options: VirtualSandbox.Options = {}) =>
  Effect.map(VirtualSandbox.make(options), (sandbox) => ({ sandbox, context: ToolCall.context(sandbox) }))
