/**
 * snapshotTree — takes a `Snapshot` of an in-memory filesystem and lays one back out.
 *
 * Only the in-memory tree is read (never the mountable view over it), so mounted host
 * directories are left out by construction. Directories are listed only when empty: every other
 * one is implied by the paths below it. Restoring writes through the filesystem's own methods, so
 * its byte budget holds for a snapshot as for any write.
 */
import { Sandbox } from "@condukt/core"
import { Effect, Result } from "effect"
import { Base64 } from "effect/encoding"
import type { InMemoryFs } from "just-bash"
import type * as Snapshot from "../Snapshot.ts"
import { errnoOf, messageOf, noSpace } from "./fsError.ts"
import * as Layout from "./layout.ts"

const defaultFileMode = 0o644
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

const parentOf = (path: string): string => path.slice(0, Math.max(1, path.lastIndexOf("/")))

const failed = (action: string, path: string, budgetBytes: number) => (cause: unknown) =>
  new Sandbox.Failed({
    description: `Cannot ${action} ${path}: ${errnoOf(cause)?.code === "ENOSPC" ? noSpace(budgetBytes) : messageOf(cause)}`,
    cause
  })

const fileEntry = (path: string, bytes: Uint8Array, mode: number): Snapshot.Entry => {
  const extra = (mode & 0o7777) === defaultFileMode ? {} : { mode: mode & 0o7777 }
  const text = Result.try(() => strict.decode(bytes))
  return Result.isSuccess(text)
    ? { type: "file", path, encoding: "utf8", content: text.success, ...extra }
    : { type: "file", path, encoding: "base64", content: Base64.encode(bytes), ...extra }
}

/**
 * The tree of `fs` as a snapshot, without the standard layout.
 *
 * @since 0.1.0
 * @category constructors
 */
export const capture = (fs: InMemoryFs, budgetBytes: number): Effect.Effect<Snapshot.Snapshot, Sandbox.Failed> =>
  Effect.gen(function*() {
    const entries: Array<Snapshot.Entry> = []
    const directories: Array<string> = []
    for (const path of fs.getAllPaths().sort()) {
      if (path === "/") continue
      const fail = failed("snapshot", path, budgetBytes)
      const stat = yield* Effect.tryPromise({ try: () => fs.lstat(path), catch: fail })
      if (Layout.isLayout(path, stat)) continue
      if (stat.isSymbolicLink) {
        const target = yield* Effect.tryPromise({ try: () => fs.readlink(path), catch: fail })
        entries.push({ type: "symlink", path, target })
      } else if (stat.isDirectory) directories.push(path)
      else {
        const bytes = yield* Effect.tryPromise({ try: () => fs.readFileBuffer(path), catch: fail })
        entries.push(fileEntry(path, bytes, stat.mode))
      }
    }
    const implied = new Set<string>()
    for (const path of [...entries.map((entry) => entry.path), ...directories]) {
      for (let parent = parentOf(path); parent !== "/" && !implied.has(parent); parent = parentOf(parent)) {
        implied.add(parent)
      }
    }
    for (const path of directories) if (!implied.has(path)) entries.push({ type: "directory", path })
    entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    return { version: 1 as const, entries }
  })

/**
 * Writes the snapshot's entries into `fs` (parents created, existing files replaced).
 *
 * @since 0.1.0
 * @category combinators
 */
export const restore = (
  fs: InMemoryFs,
  snapshot: Snapshot.Snapshot,
  budgetBytes: number
): Effect.Effect<void, Sandbox.Failed> =>
  Effect.forEach(snapshot.entries, (entry) => {
    const fail = failed("restore", entry.path, budgetBytes)
    switch (entry.type) {
      case "directory":
        return Effect.try({ try: () => fs.mkdirSync(entry.path, { recursive: true }), catch: fail })
      case "symlink":
        return Effect.tryPromise({
          try: () => fs.mkdir(parentOf(entry.path), { recursive: true }).then(() => fs.symlink(entry.target, entry.path)),
          catch: fail
        })
      case "file": {
        const bytes = entry.encoding === "utf8"
          ? Effect.succeed<string | Uint8Array>(entry.content)
          : Effect.mapError(Effect.fromResult(Base64.decode(entry.content)), fail)
        return Effect.flatMap(bytes, (content) =>
          Effect.try({
            try: () => fs.writeFileSync(entry.path, content, "utf8", { mode: entry.mode ?? defaultFileMode }),
            catch: fail
          }))
      }
    }
  }, { discard: true })
