export * as Processes from "./Processes.ts"
export * as TestModel from "./TestModel.ts"
