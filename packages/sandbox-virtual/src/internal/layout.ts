/**
 * layout — the tree every virtual sandbox starts with: `/usr/bin` holding one stub per built-in
 * command (and `/bin` linking to it), `/dev/null` and friends, `/tmp`, `/home/user` and the cwd.
 *
 * just-bash lays this out itself only on the filesystem it builds by default; handed a
 * `MountableFs` (which we need for mounts) it lays out nothing (vercel-labs/just-bash#421), so
 * `which ls` and `ls /bin` fail and `echo x > /dev/null` creates `/dev` and a file in it. Commands
 * resolve by stub path (`/usr/bin/<name>`), never by stub content, so the stubs are empty: they
 * cost no bytes of the filesystem budget. `/bin` links to `/usr/bin` (as on most Linux systems
 * today), which halves what the stubs cost an idle sandbox (~52 KB in all instead of ~72 KB).
 *
 * As in just-bash's own layout, `/dev/null` is a regular file: `> /dev/null` writes to it.
 *
 * The layout is not part of a snapshot: `isLayout` names what `install` recreates.
 */
import { Sandbox } from "@condukt/core"
import { Effect } from "effect"
import { getCommandNames, type InMemoryFs } from "just-bash"
import { messageOf } from "./fsError.ts"

const commandNames = new Set(getCommandNames())
const directories = ["/usr/bin", "/tmp", "/home/user", "/dev"]
const devices = ["/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"]
const empty = new Uint8Array(0)
const executable = 0o755

/**
 * The home directory every sandbox has, whatever its cwd.
 *
 * @since 0.1.0
 * @category models
 */
export const home = "/home/user"

/**
 * Lays the standard tree out on `fs` and creates `cwd`; fails only when the filesystem refuses
 * (a `cwd` under a path the layout made a file).
 *
 * @since 0.1.0
 * @category constructors
 */
export const install = (fs: InMemoryFs, cwd: string): Effect.Effect<void, Sandbox.Failed> => {
  const failed = (cause: unknown) =>
    new Sandbox.Failed({ description: `Cannot lay out the sandbox with cwd ${cwd}: ${messageOf(cause)}`, cause })
  return Effect.andThen(
    Effect.try({
      try: () => {
        for (const directory of directories) fs.mkdirSync(directory, { recursive: true })
        for (const device of devices) fs.writeFileSync(device, empty)
        for (const name of commandNames) fs.writeFileSync(`/usr/bin/${name}`, empty, undefined, { mode: executable })
        fs.mkdirSync(cwd, { recursive: true })
      },
      catch: failed
    }),
    Effect.tryPromise({ try: () => fs.symlink("usr/bin", "/bin"), catch: failed })
  )
}

/**
 * Whether an entry is one `install` creates (so a snapshot leaves it out).
 *
 * @since 0.1.0
 * @category guards
 */
export const isLayout = (
  path: string,
  entry: { readonly isDirectory: boolean; readonly isSymbolicLink: boolean; readonly size: number }
): boolean => {
  if (entry.isSymbolicLink) return path === "/bin"
  if (entry.isDirectory) return directories.includes(path) || path === "/home" || path === "/usr"
  if (path.startsWith("/dev/")) return true
  return entry.size === 0 && path.startsWith("/usr/bin/") && commandNames.has(path.slice("/usr/bin/".length))
}
