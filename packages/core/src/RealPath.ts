/**
 * RealPath — the path check behind `LocalSandbox`'s `allowedPaths` (Alloy 0.12.5 semantics).
 *
 * A path is walked component by component from `/` the way the kernel walks it: each symlink is
 * followed (an absolute target restarts at the root, a relative one is spliced into the remaining
 * components), `..` applies to the real directory reached so far, and more than 40 hops fail.
 * Components that do not exist yet are kept as written, so a file can be checked before it is
 * created. The caller opens the real path it gets back, so what was checked is what is opened.
 *
 * It refuses to be a sandbox: another process (the agent's own bash) can still swap a component
 * for a symlink between the check and the open.
 */
import { Effect, type FileSystem } from "effect"
import { OutsideAllowedPaths, TooManySymlinks } from "./Sandbox.ts"

/** The kernel's own limit (Linux MAXSYMLINKS). */
const maxSymlinkHops = 40

const components = (path: string): Array<string> => path.split("/").filter((c) => c !== "" && c !== ".")

const join = (parts: ReadonlyArray<string>): string => "/" + parts.join("/")

/**
 * The real path of an absolute path. A component that cannot be inspected (missing, not a
 * directory, unreadable) is kept as written: opening it will fail with the kernel's own error.
 */
export const resolve = (fs: FileSystem.FileSystem, path: string): Effect.Effect<string, TooManySymlinks> =>
  Effect.gen(function*() {
    const real: Array<string> = []
    // A stack: the next component to visit is the last element.
    const pending = components(path).reverse()
    let hops = 0
    while (pending.length > 0) {
      const component = pending.pop()!
      if (component === "..") {
        real.pop()
        continue
      }
      const candidate = join([...real, component])
      const target = yield* fs.lstat(candidate).pipe(
        Effect.flatMap((info) => info.type === "SymbolicLink" ? fs.readLink(candidate) : Effect.succeed(undefined)),
        Effect.orElseSucceed(() => undefined)
      )
      if (target === undefined) {
        real.push(component)
        continue
      }
      if (++hops > maxSymlinkHops) return yield* new TooManySymlinks({ path })
      if (target.startsWith("/")) real.length = 0
      pending.push(...components(target).reverse())
    }
    return join(real)
  })

/** True when `real` is `root` or lies below it (a directory boundary, not a string prefix). */
export const isWithin = (real: string, root: string): boolean =>
  real === root || real.startsWith(root.endsWith("/") ? root : root + "/")

/**
 * Resolves `path` and admits it when its real path lies within the real path of one of `roots`
 * (all absolute). A root that cannot be resolved admits nothing. The failure names `display`,
 * the path as the caller expanded it.
 */
export const check = (
  fs: FileSystem.FileSystem,
  path: string,
  display: string,
  roots: ReadonlyArray<string>
): Effect.Effect<string, TooManySymlinks | OutsideAllowedPaths> =>
  Effect.gen(function*() {
    const real = yield* Effect.mapError(resolve(fs, path), () => new TooManySymlinks({ path: display }))
    const realRoots = yield* Effect.forEach(roots, (root) => Effect.option(resolve(fs, root)))
    const admitted = realRoots.some((root) => root._tag === "Some" && isWithin(real, root.value))
    if (!admitted) return yield* new OutsideAllowedPaths({ path: display, allowed: [...roots] })
    return real
  })
