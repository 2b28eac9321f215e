/**
 * Runner processes for the cluster's tests: fixtures/runner.ts started as children (driven line by
 * line over stdin and stdout, killed with the scope), and what a test checks of the processes
 * their tools started.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { storeWriter } from "../../../node/test/sessionStore/processes.ts"

const fixture = path.resolve(import.meta.dirname, "../fixtures/runner.ts")

/** Runners `a` and `b` on `location` (their markers in `dir`; `rest`, more arguments), up. */
export const twoRunners = (kind: "sqlite" | "pg", location: string, dir: string, ...rest: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const runners = {
      a: yield* storeWriter([kind, location, "a", dir, ...rest], fixture),
      b: yield* storeWriter([kind, location, "b", dir, ...rest], fixture)
    }
    assert.deepStrictEqual([(yield* runners.a.next).split(" ", 2), (yield* runners.b.next).split(" ", 2)], [["ready", "a"], ["ready", "b"]])
    return runners
  })

/** `/proc/<pid>/stat`, or "" once the process is gone (it may go between the listing and the read). */
const statOf = (pid: number | string): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  } catch {
    return ""
  }
}

/** The process group of `pid` (from /proc), or undefined once it is gone. */
export const groupOf = (pid: number): number | undefined => {
  const stat = statOf(pid)
  if (stat === "") return undefined
  const group = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]
  return group === undefined ? undefined : Number(group)
}

/** The live (not zombie) processes of group `group`. */
export const membersOf = (group: number): ReadonlyArray<number> =>
  fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    const stat = statOf(entry)
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return fields[2] === String(group) && fields[0] !== "Z" ? [Number(entry)] : []
  })

/** Waits until group `group` has no live process (polled, 20 ms apart, for at most 10 s); fails naming the survivors. */
export const awaitGroupGone = (group: number) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 500; attempt++) {
      if (membersOf(group).length === 0) return
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.fail(`process group ${group} still has ${membersOf(group).join(", ")}`)
  })
