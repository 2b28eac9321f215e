/**
 * ToolStep — a `tool` step: one call of any tool of the run's registry (built-ins `Read Write Edit
 * Glob Grep Bash`, `<server>.<tool>` from MCP, the caller's), through core's Executor, so its
 * decoding, timeouts and failure texts are the ones a model would read. A failed call is data,
 * `{ ok: false, error }`, and the run goes on; an unknown tool id fails the run.
 */
import { Effect } from "effect"
import type * as Expression from "../Expression.ts"
import { failed, type Fields, type StepContext } from "./StepContext.ts"

/** @since 0.1.0 @category constructors */
export const run = Effect.fnUntraced(function*(id: string, fields: Fields, context: StepContext) {
  const name = fields["id"]
  if (typeof name !== "string" || !context.tools.has(name)) {
    const known = [...context.tools.keys()].sort().join(", ")
    return yield* failed("UnknownTool", id, `unknown tool ${JSON.stringify(name)}; the tools here are ${known}`)
  }
  const { results } = yield* context.toolExecutor.run(
    [{ id, name, input: fields["args"] ?? {} }],
    { sessionId: context.workflow, agent: context.workflow, sandbox: context.sandbox, cwd: context.sandbox.cwd, secrets: {} },
    {}
  )
  const result = results[0]!
  if (result.isError) return { ok: false, error: result.content }
  return { ok: true, output: (result.data ?? result.content) as Expression.Value }
})
