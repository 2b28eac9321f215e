export * as Cli from "./Cli.ts"
export * as InputArgs from "./InputArgs.ts"
export * as Progress from "./Progress.ts"
export * as Version from "./Version.ts"
