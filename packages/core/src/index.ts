export * as Sandbox from "./Sandbox.ts"
export * as Tool from "./Tool.ts"
