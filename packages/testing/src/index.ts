export * as TestModel from "./TestModel.ts"
