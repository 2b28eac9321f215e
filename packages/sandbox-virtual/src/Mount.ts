/**
 * Mount — the tool that lets a model mount a host directory into its sandbox at run time,
 * through `Sandbox.mount` (the virtual sandbox has it; others answer that they do not).
 *
 * Which host directories are exposed is the agent owner's decision, not the model's, so the tool
 * is made by a factory: `Mount({ roots, maxMode })`. Only a directory at or below one of `roots`
 * can be mounted, judged on real paths (every symlink followed, in the host path and in the roots),
 * and the real path is what gets mounted; no roots (the default) means nothing can be mounted.
 * Mounts are read-only unless `maxMode` is `"read-write"` and the model asks for it. An agent that
 * needs a fixed directory is better served by the sandbox's `mounts` option.
 */
import { Sandbox, Tool, ToolError } from "@condukt/core"
import { Effect, Schema } from "effect"
import * as HostMount from "./internal/hostMount.ts"

/** @since 0.1.0 @category models */
export interface Options {
  /** Host directories the model may mount, or mount below (relative ones start at the process's cwd). Default: none. */
  readonly roots?: ReadonlyArray<string> | undefined
  /** The most a mount may allow (default `"read-only"`). */
  readonly maxMode?: Sandbox.MountMode | undefined
}

const Parameters = Schema.Struct({
  host_path: Schema.String.annotate({ description: "The host directory to mount (absolute path)" }),
  vfs_path: Schema.String.annotate({
    description: "Where the directory appears inside the sandbox (absolute, or relative to the working directory)"
  }),
  mode: Schema.Literals(["read-only", "read-write"])
    .annotate({ description: 'Access mode (default "read-only"); "read-write" writes go straight to the host' })
    .pipe(Schema.withDecodingDefaultKey(Effect.succeed("read-only" as const)))
})

const refuse = (message: string) => Effect.fail(new ToolError.ToolError({ message }))

const describe = (roots: ReadonlyArray<string>, maxMode: Sandbox.MountMode): string =>
  [
    "Mount a directory of the host machine into the sandbox so commands and file tools can reach it.",
    roots.length === 0
      ? "No host directory may be mounted in this session."
      : `Only these host directories, or directories below them, may be mounted: ${roots.join(", ")}.`,
    maxMode === "read-write"
      ? 'The mount is read-only unless mode is "read-write", in which case writes change the host directory.'
      : "Mounts are read-only.",
    "Symlinks inside the directory are not followed and `..` cannot leave it."
  ].join(" ")

/**
 * The Mount tool for a set of host roots, read-only unless `maxMode` allows more.
 *
 * @since 0.1.0
 * @category constructors
 */
export const Mount = (options: Options = {}): Tool.Tool => {
  const roots = options.roots ?? []
  const maxMode = options.maxMode ?? "read-only"
  return Tool.make("Mount", {
    description: describe(roots, maxMode),
    parameters: Parameters,
    concurrent: false,
    call: Effect.fn("Mount.call")(function*({ host_path, vfs_path, mode }: typeof Parameters.Type, context: Tool.Context) {
      if (roots.length === 0) {
        return yield* refuse(`Mount failed: no host directory may be mounted in this session`)
      }
      if (mode === "read-write" && maxMode === "read-only") {
        return yield* refuse(`Mount failed: read-write mounts are not allowed here; mount ${host_path} read-only`)
      }
      const real = yield* HostMount.realPath(host_path)
      const realRoots = yield* Effect.forEach(roots, HostMount.realPath)
      if (!realRoots.some((root) => HostMount.isWithin(real, root))) {
        return yield* refuse(`Mount failed: ${host_path} is outside the directories that may be mounted (${roots.join(", ")})`)
      }
      yield* Effect.mapError(context.sandbox.mount(real, vfs_path, mode), ({ reason }) => {
        switch (reason._tag) {
          case "NotSupported":
            return new ToolError.ToolError({ message: "The active sandbox does not support runtime mounting" })
          case "NotFound":
            return new ToolError.ToolError({ message: `Mount failed: ${host_path} does not exist` })
          default:
            return new ToolError.ToolError({ message: `Mount failed: ${reason.message}` })
        }
      })
      return `Mounted ${host_path} at ${vfs_path}`
    })
  })
}
