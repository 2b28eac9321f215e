/**
 * Test helpers for the built-in tools: a real LocalSandbox on a fresh temporary directory (removed
 * when the test's scope closes) and the call context a session would pass (`ToolCall.context`).
 */
import { TempDir, ToolCall } from "@condukt/testing"
import { Context, Effect, Layer, type Redacted } from "effect"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Condukt from "../../../src/Condukt.ts"
import * as LocalSandbox from "../../../src/sandbox/Local.ts"

/** A temporary directory holding `files` (relative path → content), deleted with the scope. */
export const tempDir = (files: Readonly<Record<string, string | Uint8Array>> = {}) => TempDir.withFiles(files, "condukt-tools-")

/** A LocalSandbox on a fresh temporary directory holding `files`, and a context that holds it. */
export const localContext = (
  files: Readonly<Record<string, string | Uint8Array>> = {},
  options: {
    /** Allow only the temporary directory itself (`allowedPaths: [dir]`). */
    readonly confined?: boolean
    readonly secrets?: Readonly<Record<string, Redacted.Redacted<string>>>
  } = {}
) =>
  Effect.gen(function*() {
    const dir = yield* tempDir(files)
    const services = yield* Layer.build(
      LocalSandbox.layer(options.confined === true ? { cwd: dir, allowedPaths: [dir] } : { cwd: dir }).pipe(
        Layer.provide(Condukt.layer)
      )
    )
    return { dir, context: ToolCall.context(Context.get(services, Sandbox.Sandbox), options.secrets ? { secrets: options.secrets } : {}) }
  })
