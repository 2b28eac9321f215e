/**
 * Mount — the tool that lets a model mount a host directory into its sandbox at run time,
 * through `Sandbox.mount` (the virtual sandbox has it; others answer that they do not).
 *
 * Which host directories may be exposed is the sandbox's to say, not the model's nor the tool's:
 * VirtualSandbox's `mountRoots` (default the process's working directory, docs/decisions/0052)
 * bound every runtime mount, and a refusal names them. So `Mount()` is the tool as the originals
 * have it: on a sandbox that cannot mount it says so, on a virtual one it mounts within those
 * roots. What the tool adds is the mode ceiling: read-only unless `maxMode` is `"read-write"` and
 * the model asks for it. An agent that needs a fixed directory is better served by the sandbox's
 * `mounts` option.
 */
import { Sandbox, Tool, ToolError } from "@condukt/core"
import { Effect, Schema } from "effect"

/** @since 0.1.0 @category models */
export interface Options {
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

const refuse = (message: string) => new ToolError.ToolError({ message })

const describe = (maxMode: Sandbox.MountMode): string =>
  [
    "Mount a directory of the host machine into the sandbox so commands and file tools can reach it.",
    "Only the host directories the sandbox allows, or directories below them, may be mounted; a refusal names them.",
    maxMode === "read-write"
      ? 'The mount is read-only unless mode is "read-write", in which case writes change the host directory.'
      : "Mounts are read-only.",
    "Symlinks inside the directory are not followed and `..` cannot leave it."
  ].join(" ")

/**
 * The Mount tool, read-only unless `maxMode` allows more.
 *
 * @since 0.1.0
 * @category constructors
 */
export const Mount = (options: Options = {}): Tool.Tool => {
  const maxMode = options.maxMode ?? "read-only"
  return Tool.make("Mount", {
    description: describe(maxMode),
    parameters: Parameters,
    concurrent: false,
    call: Effect.fn("Mount.call")(function*({ host_path, vfs_path, mode }: typeof Parameters.Type, context: Tool.Context) {
      if (mode === "read-write" && maxMode === "read-only") {
        return yield* refuse(`Mount failed: read-write mounts are not allowed here; mount ${host_path} read-only`)
      }
      yield* Effect.mapError(context.sandbox.mount(host_path, vfs_path, mode), ({ reason }) => {
        switch (reason._tag) {
          case "NotSupported":
            return refuse("The active sandbox does not support runtime mounting")
          case "NotFound":
            return refuse(`Mount failed: ${host_path} does not exist`)
          case "OutsideAllowedPaths":
            return refuse(
              reason.allowed.length === 0
                ? "Mount failed: no host directory may be mounted in this session"
                : `Mount failed: ${host_path} is outside the directories that may be mounted (${reason.allowed.join(", ")})`
            )
          default:
            return refuse(`Mount failed: ${reason.message}`)
        }
      })
      return `Mounted ${host_path} at ${vfs_path}`
    })
  })
}
