/**
 * Shared by the package's tests: real temporary host directories (for mounts), a virtual sandbox
 * built in the test's scope, the outcome of a failing call as plain data, and tool calls made the
 * way the Executor makes them (decode the model's input, then call with a session's context).
 */
import type { Sandbox, Tool } from "@condukt/core"
import { Effect, type Redacted } from "effect"
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

/** The context a session would give a tool call. */
export const contextOf = (
  sandbox: Sandbox.Service,
  secrets: Readonly<Record<string, Redacted.Redacted<string>>> = {}
): Tool.Context => ({
  sessionId: "test",
  agent: "test",
  sandbox,
  cwd: sandbox.cwd,
  secrets,
  assigns: {},
  callId: "call_1"
})

/** A virtual sandbox and a tool context holding it. */
export const virtualContext = (options: VirtualSandbox.Options = {}) =>
  Effect.map(VirtualSandbox.make(options), (sandbox) => ({ sandbox, context: contextOf(sandbox) }))

/** Decodes the model's input and calls the tool, as the Executor does. */
export const call = <R>(tool: Tool.Tool<R>, input: unknown, context: Tool.Context) =>
  Effect.flatMap(tool.decode(input), (args) => tool.call(args, context))

/** The message of the failure the call ends with (what the model reads after `Error: `). */
export const callFailure = <R>(tool: Tool.Tool<R>, input: unknown, context: Tool.Context) =>
  Effect.map(Effect.flip(call(tool, input, context)), (error) => (typeof error === "string" ? error : error.message))

