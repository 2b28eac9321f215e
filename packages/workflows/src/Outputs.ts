/**
 * Outputs — what each step kind gives its dependents, and the check that every member a document
 * reads of a step (`steps.a.stdout`, `steps.a["stdout"]`) is one that step's kind has: `cmd` gives
 * `ok`, `stdout`, `exit_code`; `agent` `ok`, `output`; `http` `status`, `headers`, `body`; `tool`
 * `ok` and `output` or `error`; a `map` the list of its items' outputs. A misspelt member
 * (`task.a.stdot`) is refused before the first step, by `check` and `run` alike, instead of failing
 * the run when the step that reads it comes, and so is an `output` reading a step that does not
 * exist (the steps' own references are the graph's to check). Deeper members
 * (`steps.h.body.version`) are data and are not checked. Pure.
 */
import { Result } from "effect"
import type * as Document from "./Document.ts"
import { didYouMean } from "./internal/nearest.ts"
import * as Template from "./Template.ts"
import { WorkflowFailed } from "./WorkflowError.ts"

/**
 * The members of each leaf step kind's output.
 *
 * @since 0.1.0
 * @category models
 */
export const MEMBERS: Readonly<Record<Exclude<Document.Step["kind"], "map">, ReadonlyArray<string>>> = {
  cmd: ["ok", "stdout", "exit_code"],
  agent: ["ok", "output"],
  http: ["status", "headers", "body"],
  tool: ["ok", "output", "error"]
}

/** Why `member` cannot be read of step `id`, or undefined when it can. */
const problem = (steps: Document.Document["steps"], id: string, member: string): string | undefined => {
  if (!Object.hasOwn(steps, id)) return undefined
  const step = steps[id]!
  if (step.kind === "map") {
    return `reads steps.${id}.${member}, but a map step's output is the list of its items' outputs; index it first (steps.${id}[0].${member})`
  }
  const members = MEMBERS[step.kind]
  return members.includes(member) ? undefined : `reads steps.${id}.${member}, but a ${step.kind} step's output has only ${members.join(", ")}`
}

/**
 * Succeeds when every step output member the document reads exists; else the first that does
 * not (steps in id order, then `output`), as a `WorkflowFailed` of reason `UnknownMember` naming
 * the step that reads it ("" for `output`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const check = (document: Document.Document): Result.Result<void, WorkflowFailed> => {
  const ids = Object.keys(document.steps)
  const unknown = Template.references(document.output ?? null).find((id) => !Object.hasOwn(document.steps, id))
  if (unknown !== undefined) {
    const description = `output refers to task.${unknown}, which is not a step of this workflow${didYouMean(unknown, ids) || "; fix the name or add the step"}`
    return Result.fail(new WorkflowFailed({ reason: "UnknownMember", step: "", description }))
  }
  const readers: ReadonlyArray<readonly [string, unknown]> = [
    ...Object.keys(document.steps).sort().map((id) => [id, document.steps[id]] as const),
    ["", document.output ?? null]
  ]
  for (const [reader, value] of readers) {
    for (const { member, step } of Template.stepMembers(value)) {
      const description = problem(document.steps, step, member)
      if (description !== undefined) {
        return Result.fail(new WorkflowFailed({ reason: "UnknownMember", step: reader, description: reader === "" ? `output ${description}` : description }))
      }
    }
  }
  return Result.void
}
