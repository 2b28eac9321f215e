/**
 * callSpans — each tool call of a run in an `execute_tool <name>` span, under a real tracer only.
 *
 * The span holds the call from its decoding to its rendered result: names and ids, and, when the
 * program opted in (`TraceContent`), the arguments and the result, redacted (genAi.ts). Under
 * Effect's default tracer no span is made (`Tracing.isTraced`).
 */
import { Effect } from "effect"
import type * as Executor from "../Executor.ts"
import * as TraceContent from "../TraceContent.ts"
import * as Tracing from "../Tracing.ts"
import * as GenAi from "./genAi.ts"

/** What a call's span learns from its result, made once. */
const ended: Tracing.Hooks<Executor.Done, never> = { ended: (done) => GenAi.executed(done.result) }

const spans: Executor.Wrapper<unknown> = {
  around: (found, self, context) =>
    Effect.withFiber((fiber) => {
      if (!Tracing.isTraced(fiber)) return self
      const [name, options] = GenAi.executeTool(found.tool.name, found.call.id)
      if (!fiber.getRef(TraceContent.TraceContent)) return Tracing.within(self, name, options, ended)
      const redact = context.redact
      return Tracing.within(self, name, { ...options, attributes: { ...options.attributes, ...GenAi.callContent(found.call.input, redact) } }, {
        ended: (done) => ({ ...GenAi.executed(done.result), ...GenAi.resultContent(done.result, redact) })
      })
    })
}

/** The wrapper: one span per call (one object for every run). */
export const wrapper = <R>(): Executor.Wrapper<R> => spans as Executor.Wrapper<R>
