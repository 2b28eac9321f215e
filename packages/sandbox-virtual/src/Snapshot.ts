/**
 * Snapshot — a virtual sandbox's in-memory tree as plain JSON data, so a session's workspace can
 * be saved with the session and restored into a new sandbox (`VirtualSandbox.make({ snapshot })`).
 *
 * It holds files (UTF-8 text as is, anything else base64), empty directories, symbolic links and
 * non-default file modes. It leaves out what every sandbox recreates (the command stubs in
 * `/usr/bin`, `/bin`, `/dev`), modification times, and mounts: a mounted host directory belongs
 * to the host, and a restored sandbox mounts what its own options say.
 */
import { Schema } from "effect"

/** @since 0.1.0 @category models */
export const Directory = Schema.Struct({
  type: Schema.Literal("directory"),
  path: Schema.String
})

/** @since 0.1.0 @category models */
export const File = Schema.Struct({
  type: Schema.Literal("file"),
  path: Schema.String,
  /** `utf8` when the bytes are valid UTF-8 text, `base64` otherwise. */
  encoding: Schema.Literals(["utf8", "base64"]),
  content: Schema.String,
  /** Permission bits, present only when not the default `0o644`. */
  mode: Schema.optionalKey(Schema.Int)
})

/** @since 0.1.0 @category models */
export const Symlink = Schema.Struct({
  type: Schema.Literal("symlink"),
  path: Schema.String,
  target: Schema.String
})

/** @since 0.1.0 @category models */
export const Entry = Schema.Union([Directory, File, Symlink])

/** @since 0.1.0 @category models */
export type Entry = typeof Entry.Type

/**
 * The whole tree, paths absolute and sorted. `JSON.stringify` it to save; decode the text with
 * `Schema.decodeUnknownEffect(Schema.fromJsonString(Snapshot))` to restore.
 *
 * @since 0.1.0
 * @category models
 */
export const Snapshot = Schema.Struct({
  version: Schema.Literal(1),
  entries: Schema.Array(Entry)
})

/** @since 0.1.0 @category models */
export type Snapshot = typeof Snapshot.Type
