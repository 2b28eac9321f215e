/**
 * nodeSqlite — the one place that opens a database with Node's built-in SQLite (`node:sqlite`).
 *
 * The module is loaded when a database is first opened, never at import, so a program that does
 * not use the SQLite store never loads it. Loading it prints an ExperimentalWarning on the Node 22
 * line; a library must not write to its program's stderr, so that one warning is dropped while the
 * module loads, and every other warning passes through.
 */
import { Effect } from "effect"
import type { DatabaseSync, StatementSync } from "node:sqlite"

export type Database = DatabaseSync

export type Statement = StatementSync

type EmitWarning = typeof process.emitWarning

const isSqliteWarning = (warning: string | Error, rest: ReadonlyArray<unknown>) => {
  const type = typeof rest[0] === "string" ? rest[0] : (rest[0] as { type?: unknown } | undefined)?.type
  const name = warning instanceof Error ? warning.name : type
  const text = warning instanceof Error ? warning.message : warning
  return name === "ExperimentalWarning" && text.startsWith("SQLite is an experimental feature")
}

/** The `node:sqlite` module, loaded with its ExperimentalWarning dropped. */
const sqlite = Effect.acquireUseRelease(
  Effect.sync(() => {
    const original: EmitWarning = process.emitWarning
    // `process.emitWarning` has overloads a plain function cannot spell; the filter forwards as given.
    process.emitWarning = ((warning: string | Error, ...rest: Array<unknown>) => {
      if (!isSqliteWarning(warning, rest)) Reflect.apply(original, process, [warning, ...rest])
    }) as EmitWarning
    return original
  }),
  () => Effect.sync(() => process.getBuiltinModule("node:sqlite")),
  (original) => Effect.sync(() => { process.emitWarning = original })
)

/** Opens (creating) the database file; `onError` turns what SQLite throws into the caller's error. */
export const open = <E>(file: string, onError: (cause: unknown) => E): Effect.Effect<Database, E> =>
  Effect.flatMap(sqlite, (module) => Effect.try({ try: () => new module.DatabaseSync(file), catch: onError }))
