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
          : `steps ${cycle.join(", ")} depend on each other in a cycle; remove one of the dependencies`
      })
    )
  }
  return Result.succeed({ dependencies, order })
}

/**
 * Of the steps Kahn's algorithm could not order, those on a cycle: each step that can reach
 * itself through dependencies among them (the others only wait behind a cycle). Sorted.
 */
const onCycles = (left: ReadonlyArray<string>, dependencies: ReadonlyMap<string, ReadonlyArray<string>>): ReadonlyArray<string> => {
  const among = new Set(left)
  const reaches = (from: string, target: string): boolean => {
    const seen = new Set<string>()
    const stack = [...dependencies.get(from)!]
    while (stack.length > 0) {
      const id = stack.pop()!
      if (id === target) return true
      if (seen.has(id) || !among.has(id)) continue
      seen.add(id)
      stack.push(...dependencies.get(id)!)
    }
    return false
  }
  return left.filter((id) => reaches(id, id))
}
