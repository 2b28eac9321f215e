/**
 * Runner processes for the cluster's tests: fixtures/runner.ts started as children (driven line by
 * line over stdin and stdout, killed with the scope), and what a test checks of the processes
 * their tools started.
 */
import { assert } from "@effect/vitest"
import { Effect, Schedule } from "effect"
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

/** A runner child (`twoRunners`). */
export type Child = Effect.Success<ReturnType<typeof twoRunners>>["a"]

/** Sends `command` to a runner; the numbers of its answer (`<command> <n>…`). */
export const ask = (runner: Child, command: string) =>
  Effect.gen(function*() {
    yield* runner.send(command)
    const [word, ...values] = (yield* runner.next).split(" ")
    assert.strictEqual(word, command)
    return values.map(Number)
  })

/**
 * Waits until the runners share the shards for good: every shard held, by one or the other, none
 * being released, the same on two asks 500 ms apart (a runner that joins is kept out of the
 * assignment for a while, then shards move to it: a session's runner may change until then).
 */
export const settled = (runners: { readonly a: Child; readonly b: Child }, shards = 100) => {
  let previous = ""
  return Effect.gen(function*() {
    const [a, b] = [yield* ask(runners.a, "shards"), yield* ask(runners.b, "shards")]
    const now = `${a} ${b}`
    const stable = now === previous && a[0]! > 0 && b[0]! > 0 && a[0]! + b[0]! === shards && a[1] === 0 && b[1] === 0
    previous = now
    if (!stable) return yield* Effect.fail(`shards held and releasing: a ${a}, b ${b}`)
  }).pipe(Effect.retry({ schedule: Schedule.spaced("500 millis"), times: 120 }))
}

/** Field `index` of `/proc/<pid>/stat` after the command (0: state, 1: parent, 2: group), or undefined once it is gone. */
const statField = (pid: number, index: number): number | undefined => {
  const stat = statOf(pid)
  const field = stat === "" ? undefined : stat.slice(stat.lastIndexOf(")") + 2).split(" ")[index]
  return field === undefined ? undefined : Number(field)
}

/** The process group of `pid`, or undefined once it is gone. */
export const groupOf = (pid: number): number | undefined => statField(pid, 2)

/** The parent of `pid`, or undefined once it is gone. */
export const parentOf = (pid: number): number | undefined => statField(pid, 1)

/** The live (not zombie) processes of group `group`. */
export const membersOf = (group: number): ReadonlyArray<number> =>
  fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    const stat = statOf(entry)
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return fields[2] === String(group) && fields[0] !== "Z" ? [Number(entry)] : []
  })

/**
 * The programs' reapers (`awk`s, packages/node/src/internal/reaper.ts) alive on the machine, each
 * `pid(parent,group,state)<-stdin`: what a group left behind is explained by (a failure message).
 */
const reapers = (): string =>
  fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    const stat = statOf(entry)
    if (!/\((mawk|gawk|awk|original-awk)\)/.test(stat)) return []
    const [state, parent, group] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    let stdin = "?"
    try {
      stdin = fs.readlinkSync(`/proc/${entry}/fd/0`)
    } catch {
      // gone, or not ours to read
    }
    return [`${entry}(${parent},${group},${state})<-${stdin}`]
  }).join(" ") || "none"

/** Waits until group `group` has no live process (polled, 20 ms apart, for at most 10 s); fails naming the survivors and the reapers alive. */
export const awaitGroupGone = (group: number) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 500; attempt++) {
      if (membersOf(group).length === 0) return
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.fail(`process group ${group} still has ${membersOf(group).join(", ")}; reapers alive: ${reapers()}`)
  })
