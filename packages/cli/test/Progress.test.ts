import { WorkflowEvent } from "@condukt/workflows"
import { assert, describe, it } from "@effect/vitest"
import * as Progress from "../src/Progress.ts"

/** One event of each kind, an agent step's among them, as a run with two steps reports them. */
const events: ReadonlyArray<WorkflowEvent.WorkflowEvent> = [
  new WorkflowEvent.RunStarted({ workflow: "notes", steps: ["notes", "late"], at: 0 }),
  new WorkflowEvent.StepStarted({ step: "notes", at: 1 }),
  new WorkflowEvent.TurnStarted({ step: "notes", at: 2, turn: 1 }),
  new WorkflowEvent.TurnFinished({ step: "notes", at: 3, turn: 1, inputTokens: 56, outputTokens: 48, tokensSoFar: 168 }),
  new WorkflowEvent.ToolStarted({ step: "notes", at: 4, callId: "call_1", tool: "Read" }),
  new WorkflowEvent.ToolStarted({ step: "notes", at: 4, callId: "call_2", tool: "Grep" }),
  new WorkflowEvent.ToolFinished({ step: "notes", at: 16, callId: "call_1", tool: "Read", durationMs: 12, ok: true }),
  new WorkflowEvent.ToolFinished({ step: "notes", at: 1504, callId: "call_2", tool: "Grep", durationMs: 1500, ok: false }),
  new WorkflowEvent.StepFinished({ step: "notes", at: 2000, durationMs: 1999 }),
  new WorkflowEvent.StepSkipped({ step: "late", at: 2000, why: "when is false" }),
  new WorkflowEvent.StepFailed({ step: "other", at: 2001, durationMs: 3, error: "step other: exit code 1" }),
  new WorkflowEvent.RunFinished({ at: 2002, durationMs: 2002, ok: false })
]

describe("Progress", () => {
  it("on a terminal, each event is a line with its mark", () => {
    assert.deepStrictEqual(events.map((event) => Progress.line(event, "tty")), [
      "notes: 2 steps pending (notes, late)",
      "  ▸ notes running",
      "    notes: turn 1",
      "    notes: turn 1 done, 168 tokens so far",
      "    notes: ▸ Read call_1 running",
      "    notes: ▸ Grep call_2 running",
      "    notes: ✓ Read call_1 done in 12ms",
      "    notes: ✗ Grep call_2 answered an error after 1.5s",
      "  ✓ notes done in 2.0s",
      "  - late skipped (when is false)",
      "  ✗ other failed after 3ms: step other: exit code 1",
      "failed in 2.0s"
    ])
  })

  it("off a terminal, the same lines without marks", () => {
    assert.deepStrictEqual(events.map((event) => Progress.line(event, "plain")), [
      "notes: 2 steps pending (notes, late)",
      "  notes running",
      "    notes: turn 1",
      "    notes: turn 1 done, 168 tokens so far",
      "    notes: Read call_1 running",
      "    notes: Grep call_2 running",
      "    notes: Read call_1 done in 12ms",
      "    notes: Grep call_2 answered an error after 1.5s",
      "  notes done in 2.0s",
      "  late skipped (when is false)",
      "  other failed after 3ms: step other: exit code 1",
      "failed in 2.0s"
    ])
  })

  it("--json prints the event whole, the step's id included", () => {
    assert.strictEqual(
      Progress.json(events[3]!),
      `{"_tag":"TurnFinished","step":"notes","at":3,"turn":1,"inputTokens":56,"outputTokens":48,"tokensSoFar":168}`
    )
  })

  it("in a durable run resumed after a restart, a step done before it and one that runs again say so", () => {
    const resumed = [
      new WorkflowEvent.StepFinished({ step: "build", at: 5, durationMs: 0, resumed: true }),
      new WorkflowEvent.StepStarted({ step: "deploy", at: 6, restarted: true }),
      new WorkflowEvent.StepFinished({ step: "deploy", at: 9, durationMs: 3, resumed: false })
    ]
    assert.deepStrictEqual(resumed.map((event) => Progress.line(event, "tty")), [
      "  ✓ build done before the restart, not run again",
      "  ▸ deploy running again: it started before the restart and did not finish",
      "  ✓ deploy done in 3ms"
    ])
    assert.deepStrictEqual(resumed.map((event) => Progress.line(event, "plain")), [
      "  build done before the restart, not run again",
      "  deploy running again: it started before the restart and did not finish",
      "  deploy done in 3ms"
    ])
    assert.deepStrictEqual(resumed.map(Progress.json), [
      `{"_tag":"StepFinished","step":"build","at":5,"durationMs":0,"resumed":true}`,
      `{"_tag":"StepStarted","step":"deploy","at":6,"restarted":true}`,
      `{"_tag":"StepFinished","step":"deploy","at":9,"durationMs":3,"resumed":false}`
    ])
  })
})
