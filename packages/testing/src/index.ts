export * as Processes from "./Processes.ts"
export * as TestModel from "./TestModel.ts"
export * as ToolCall from "./ToolCall.ts"
export * as Spans from "./Spans.ts"
