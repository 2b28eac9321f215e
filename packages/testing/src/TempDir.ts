/**
 * TempDir — a fresh directory under the OS's temporary directory for one test, removed with the
 * test's scope, so a test that writes files (a store, a workspace, a pid file) leaves nothing behind.
 * Its path is the real one (symbolic links resolved, as macOS's `/tmp` is one), so it compares
 * equal to the paths a sandbox or a child process reports.
 *
 * Node's `fs`, `os` and `path` are loaded when a directory is made (`process.getBuiltinModule`)
 * rather than imported: `@condukt/testing` also bundles for a browser page or worker (ADR 0094).
 */
import { Effect, type Scope } from "effect"

/** Files to seed a directory with: a path relative to it (parents made as needed) → its content. */
export type Files = Readonly<Record<string, string | Uint8Array>>

/**
 * A fresh directory named `prefix` and six random characters under `os.tmpdir()`, holding `files`;
 * it and everything in it is removed when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const withFiles = (files: Files, prefix = "condukt-"): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const fs = process.getBuiltinModule("node:fs")
      const path = process.getBuiltinModule("node:path")
      const dir = fs.realpathSync(fs.mkdtempSync(path.join(process.getBuiltinModule("node:os").tmpdir(), prefix)))
      for (const [file, content] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
        fs.writeFileSync(path.join(dir, file), content)
      }
      return dir
    }),
    (dir) => Effect.sync(() => process.getBuiltinModule("node:fs").rmSync(dir, { recursive: true, force: true }))
  )

/**
 * A fresh, empty directory named `prefix` and six random characters under `os.tmpdir()`; it and
 * everything in it is removed when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (prefix = "condukt-"): Effect.Effect<string, never, Scope.Scope> => withFiles({}, prefix)
