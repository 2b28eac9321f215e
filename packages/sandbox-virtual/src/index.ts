export * as Mount from "./Mount.ts"
export * as Snapshot from "./Snapshot.ts"
export * as VirtualSandbox from "./VirtualSandbox.ts"
