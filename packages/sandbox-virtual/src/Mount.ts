/**
 * Mount — the tool that lets a model mount a host directory into its sandbox at run time,
 * through `Sandbox.mount` (the virtual sandbox has it; others answer that they do not).
 *
 * Read-only unless the model asks for `read-write` (Condukt mounts read-write; a model that only
 * needs to read should not be able to change the host by accident). Choosing which host
 * directories to expose is a privilege: whoever has this tool can read, and with `read-write`
 * change, any directory the process can reach. Give it to an agent only when its owner means the
 * agent to do that; an agent that needs a fixed directory is better served by the sandbox's
 * `mounts` option, decided by the program, not the model.
 */
import { Tool, ToolError } from "@condukt/core"
import { Effect, Schema } from "effect"

const Parameters = Schema.Struct({
  host_path: Schema.String.annotate({ description: "The host directory to mount (absolute path)" }),
  vfs_path: Schema.String.annotate({
    description: "Where the directory appears inside the sandbox (absolute, or relative to the working directory)"
  }),
  mode: Schema.Literals(["read-only", "read-write"])
    .annotate({ description: 'Access mode (default "read-only"); "read-write" writes go straight to the host' })
    .pipe(Schema.withDecodingDefaultKey(Effect.succeed("read-only" as const)))
})

/**
 * Mounts a host directory into the session's sandbox.
 *
 * @since 0.1.0
 * @category models
 */
export const Mount = Tool.make("Mount", {
  description: [
    "Mount a directory of the host machine into the sandbox so commands and file tools can reach it.",
    'The mount is read-only unless mode is "read-write", in which case writes change the host directory.',
    "Symlinks inside the directory are not followed and `..` cannot leave it."
  ].join(" "),
  parameters: Parameters,
  concurrent: false,
  call: Effect.fn("Mount.call")(function*({ host_path, vfs_path, mode }: typeof Parameters.Type, context: Tool.Context) {
    yield* Effect.mapError(context.sandbox.mount(host_path, vfs_path, mode), ({ reason }) => {
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
