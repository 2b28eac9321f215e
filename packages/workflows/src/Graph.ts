/**
 * Graph — the dependency graph of a document's steps: each step depends on its `needs` and on
 * every step its strings refer to (`steps.<id>`). Pure. Refuses, before anything runs: a
 * dependency on a step that does not exist, and a cycle (Kahn's algorithm, ids in sorted order so
 * the same file always gives the same order and the same error).
 */
import { Result } from "effect"
import type * as Document from "./Document.ts"
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
          description: `depends on ${unknown}, which is not a step of this workflow; fix the name or add the step`
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
    const cycle = ids.filter((id) => !order.includes(id))
    return Result.fail(
      new WorkflowFailed({
        reason: "Cycle",
        step: "",
        description: `steps ${cycle.join(", ")} depend on each other in a cycle; remove one of the dependencies`
      })
    )
  }
  return Result.succeed({ dependencies, order })
}
