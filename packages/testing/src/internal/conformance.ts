/**
 * conformance — what the groups of the sandbox conformance suite share: the suite's hooks, outcome
 * values, fixtures and host directories.
 */
import { Sandbox } from "@condukt/core"
import { assert } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Capabilities } from "./capabilities.ts"

/** What each group of conformance tests gets from `SandboxConformance.run`. */
export interface Suite {
  /** Registers a live test on a freshly built sandbox. */
  readonly test: <A, E>(title: string, body: (sandbox: Sandbox.Service) => Effect.Effect<A, E, Scope.Scope>) => void
  /** Registers the test that an optional operation the backend lacks fails with NotSupported. */
  readonly notSupported: (operation: string, call: (sandbox: Sandbox.Service) => Effect.Effect<unknown, Sandbox.SandboxError>) => void
  readonly capabilities: Capabilities
}

/** What an operation ended with, as a plain value so a whole outcome is asserted at once. */
export type Outcome<A> = { readonly success: A } | { readonly reason: string; readonly message: string }

export const outcome = <A, R>(effect: Effect.Effect<A, Sandbox.SandboxError, R>): Effect.Effect<Outcome<A>, never, R> =>
  Effect.match(effect, {
    onFailure: (error): Outcome<A> => ({ reason: error.reason._tag, message: error.message }),
    onSuccess: (success): Outcome<A> => ({ success })
  })

/** `relative` under the sandbox's absolute `cwd`, as the backend itself would spell it. */
export const under = (cwd: string, relative: string) => (cwd.endsWith("/") ? cwd + relative : `${cwd}/${relative}`)

/** A finished command's whole result. */
export const ran = (output: string, exitCode = 0): Sandbox.ExecResult => ({ output, exitCode, truncated: false })

export const seed = (sandbox: Sandbox.Service, files: Readonly<Record<string, string>>) =>
  Effect.forEach(Object.entries(files), ([file, content]) => sandbox.writeFile(file, content), { discard: true })

/** A real host directory holding `files`, removed with the test's scope (for mounts). */
export const hostDirectory = (files: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-conformance-")))
      for (const [file, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), content)
      return dir
    }),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

export const nonUtf8 = [0x63, 0x61, 0x66, 0xe9, 0x00, 0xff, 0xfe]

export const globTree = {
  "src/b.ts": "b",
  "src/a.ts": "a",
  "src/nested/c.ts": "c",
  "src/.dot.ts": "dot",
  ".hidden/d.ts": "d",
  "README.md": "readme"
}

export const grepTree = {
  "src/a.ts": "const Alpha = 1\nconst beta = 2\nalpha()\n",
  "src/b.md": "alpha in markdown\n",
  "notes.txt": "nothing to see\n",
  ".hidden/secret.ts": "alpha, hidden\n"
}

/** The matching lines of a grep that searched every file. */
export const matchesOf = (sandbox: Sandbox.Service, pattern: string, options?: Sandbox.GrepOptions) =>
  Effect.map(sandbox.grep(pattern, options), (result) => {
    assert.deepStrictEqual(result.skipped, [], `grep ${pattern} skipped files`)
    return result.matches
  })

/** The sentence that ends every refusal of a grep pattern. */
export const dialectHint = "Patterns use RE2 syntax (as ripgrep and Go): no lookaround and no backreferences"

/** Shell syntax a glob must treat as text: none of it may run. */
export const unsafePatterns = ["$(rm -rf /)", "$(touch pwned)", "`touch pwned`", "*; touch pwned", "* && touch pwned"]
