/**
 * TempDir — a fresh directory under the OS's temporary directory for one test, removed with the
 * test's scope, so a test that writes files (a store, a workspace, a pid file) leaves nothing behind.
 *
 * Node's `fs`, `os` and `path` are loaded when `make` runs (`process.getBuiltinModule`) rather than
 * imported: `@condukt/testing` also bundles for a browser page or worker (ADR 0094).
 */
import { Effect, type Scope } from "effect"

/**
 * A fresh, empty directory named `prefix` and six random characters under `os.tmpdir()`; it and
 * everything in it is removed when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (prefix = "condukt-"): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const os = process.getBuiltinModule("node:os")
      const path = process.getBuiltinModule("node:path")
      return process.getBuiltinModule("node:fs").mkdtempSync(path.join(os.tmpdir(), prefix))
    }),
    (dir) => Effect.sync(() => process.getBuiltinModule("node:fs").rmSync(dir, { recursive: true, force: true }))
  )
