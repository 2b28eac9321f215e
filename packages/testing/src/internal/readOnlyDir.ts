/**
 * A directory made unwritable for a test of a file store's errors, by the first way that holds on
 * this host: its permission bits (enough for a user, not for root); the immutable attribute
 * (`chattr +i`, which overlay and older tmpfs refuse); a read-only bind mount of the directory on
 * itself, its files bound back writable (root with CAP_SYS_ADMIN). Each leaves the files already
 * there writable, and holds when creating a file in the directory then fails.
 * Where none does, the test is skipped naming why each did not (`Skip.now`): it cannot say here
 * what it is for.
 */
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Skip from "../Skip.ts"

interface Way {
  readonly name: string
  /** Applies it and returns how to undo it; throws, having undone what it did, when it cannot. */
  readonly apply: (dir: string) => () => void
}

/** Runs `file args` (its stderr in the error it throws), then returns `undo`. */
const run = (file: string, args: ReadonlyArray<string>, undo: () => void = () => {}) => {
  execFileSync(file, args, { stdio: ["ignore", "ignore", "pipe"] })
  return undo
}

/** Runs `steps` in order, each returning its undo; when one throws, undoes those done and rethrows. */
const all = (steps: ReadonlyArray<() => () => void>) => {
  const undos: Array<() => void> = []
  const undo = () => {
    for (const step of undos.splice(0).reverse()) step()
  }
  try {
    for (const step of steps) undos.push(step())
  } catch (error) {
    undo()
    throw error
  }
  return undo
}

/** `at` bound on itself, read-only or not; undone by unmounting it. */
const bind = (at: string, mode: "ro" | "rw") => () =>
  all([
    () => run("mount", ["--bind", at, at], () => run("umount", [at])),
    () => run("mount", ["-o", `remount,${mode},bind`, at])
  ])

const ways: ReadonlyArray<Way> = [
  {
    name: "permission bits",
    apply: (dir) => {
      fs.chmodSync(dir, 0o555)
      return () => fs.chmodSync(dir, 0o755)
    }
  },
  { name: "chattr +i", apply: (dir) => run("chattr", ["+i", dir], () => run("chattr", ["-i", dir])) },
  {
    // The files already there bound back writable over it, as the other ways leave them.
    name: "a read-only bind mount",
    apply: (dir) =>
      all([
        bind(dir, "ro"),
        ...fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isFile() ? [bind(path.join(dir, entry.name), "rw")] : []))
      ])
  }
]

/** Whether a file cannot be created in `dir` (the one made to check is removed). */
const refusesWrites = (dir: string) => {
  const probe = path.join(dir, ".condukt-read-only-probe")
  try {
    fs.writeFileSync(probe, "")
  } catch {
    return true
  }
  fs.rmSync(probe, { force: true })
  return false
}

/** Why `error` (a thrown value, a command's failure with its stderr) happened, on one line. */
const why = (error: unknown) =>
  String((error as { stderr?: unknown }).stderr || (error as { message?: unknown }).message || error).replace(/\s+/g, " ").trim().slice(0, 300)

/** Makes `dir` unwritable until the scope closes; skips the running test when no way holds here. */
export const make = (dir: string) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const failed: Array<string> = []
      for (const way of ways) {
        let undo: () => void
        try {
          undo = way.apply(dir)
        } catch (error) {
          failed.push(`${way.name}: ${why(error)}`)
          continue
        }
        if (refusesWrites(dir)) return Effect.succeed(undo)
        undo()
        failed.push(`${way.name}: a file could still be created`)
      }
      return Skip.now(`no way to make a directory read-only here (${failed.join("; ")})`)
    }),
    (undo) => Effect.sync(undo)
  )
