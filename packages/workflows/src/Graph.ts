/**
 * Graph — the dependency graph of a document's steps: each step depends on its `needs` and on
 * every step its strings refer to (`steps.<id>`). Pure. Refuses, before anything runs: a
 * dependency on a step that does not exist (naming the nearest step, a typo's likely meaning), and
 * a cycle (Kahn's algorithm, ids in sorted order so the same file always gives the same order and
 * the same error), naming the steps on it only, not the steps that merely wait behind it.
 */
import { Result } from "effect"
import type * as Document from "./Document.ts"
import { didYouMean } from "./internal/nearest.ts"
import * as Template from "./Template.ts"
import { WorkflowFailed } from "./WorkflowError.ts"

/** The most steps a cycle's error names; the others are counted. */
const MAX_NAMED = 20

/** Each step's dependencies, sorted; and the steps in an order where dependencies come first. */
export interface Graph {
  readonly dependencies: ReadonlyMap<string, ReadonlyArray<string>>
  readonly order: ReadonlyArray<string>
}

/**
 * The graph of `steps`, or the first unknown dependency or cycle.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (steps: Readonly<Record<string, Document.Step>>): Result.Result<Graph, WorkflowFailed> => {
  const ids = Object.keys(steps).sort()
  const dependencies = new Map<string, ReadonlyArray<string>>()
  for (const id of ids) {
    const step = steps[id]!
    const deps = [...new Set([...(step.needs ?? []), ...Template.references(step)])].sort()
    const unknown = deps.find((dep) => !Object.hasOwn(steps, dep))
    if (unknown !== undefined) {
      return Result.fail(
        new WorkflowFailed({
          reason: "UnknownDependency",
          step: id,
          description: `depends on ${unknown}, which is not a step of this workflow${didYouMean(unknown, ids) || "; fix the name or add the step"}`
        })
      )
    }
    dependencies.set(id, deps)
  }
  const waiting = new Map(ids.map((id) => [id, dependencies.get(id)!.length]))
  const dependents = new Map<string, Array<string>>(ids.map((id) => [id, []]))
  for (const id of ids) for (const dep of dependencies.get(id)!) dependents.get(dep)!.push(id)
  const ready = ids.filter((id) => waiting.get(id) === 0)
  const order: Array<string> = []
  while (ready.length > 0) {
    const id = ready.shift()!
    order.push(id)
    for (const next of dependents.get(id)!) {
      const left = waiting.get(next)! - 1
      waiting.set(next, left)
      if (left === 0) ready.push(next)
    }
  }
  if (order.length < ids.length) {
    const cycle = onCycles(ids.filter((id) => !order.includes(id)), dependencies)
    return Result.fail(
      new WorkflowFailed({
        reason: "Cycle",
        step: "",
        description: cycle.length === 1
          ? `step ${cycle[0]} depends on itself; remove it from its needs`
          : `steps ${cycle.length > MAX_NAMED ? `${cycle.slice(0, MAX_NAMED).join(", ")} and ${cycle.length - MAX_NAMED} more` : cycle.join(", ")} depend on each other in a cycle; remove one of the dependencies`
      })
    )
  }
  return Result.succeed({ dependencies, order })
}

/**
 * Of the steps Kahn's algorithm could not order, those on a cycle: the members of each strongly
 * connected component with more than one step, or of one step needing itself (Tarjan's algorithm,
 * iterative: a file's thousands of steps must not overflow the stack); the others only wait
 * behind a cycle. Sorted.
 */
const onCycles = (left: ReadonlyArray<string>, dependencies: ReadonlyMap<string, ReadonlyArray<string>>): ReadonlyArray<string> => {
  const among = new Set(left)
  const inside = new Map(left.map((id) => [id, dependencies.get(id)!.filter((dep) => among.has(dep))] as const))
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const members: Array<string> = []
  let next = 0
  for (const root of left) {
    if (index.has(root)) continue
    // Each frame: a step and how many of its dependencies were visited.
    const frames: Array<[string, number]> = [[root, 0]]
    index.set(root, next)
    low.set(root, next++)
    stack.push(root)
    onStack.add(root)
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!
      const [id, at] = frame
      const deps = inside.get(id)!
      if (at < deps.length) {
        frame[1] = at + 1
        const dep = deps[at]!
        if (!index.has(dep)) {
          index.set(dep, next)
          low.set(dep, next++)
          stack.push(dep)
          onStack.add(dep)
          frames.push([dep, 0])
        } else if (onStack.has(dep)) {
          low.set(id, Math.min(low.get(id)!, index.get(dep)!))
        }
        continue
      }
      frames.pop()
      if (frames.length > 0) {
        const parent = frames[frames.length - 1]![0]
        low.set(parent, Math.min(low.get(parent)!, low.get(id)!))
      }
      if (low.get(id) !== index.get(id)) continue
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== id)
      if (component.length > 1 || deps.includes(id)) members.push(...component)
    }
  }
  return members.sort()
}
