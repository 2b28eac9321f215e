// First, before any module that needs a newer Node is evaluated: refuses an unsupported one.
import "./internal/supportedNode.ts"
export * as Condukt from "./Condukt.ts"
export * as Confine from "./sandbox/Confine.ts"
export * as DiskSessionStore from "./sessionStore/Disk.ts"
export * as LocalSandbox from "./sandbox/Local.ts"
export * as NodeProcessRunner from "./processRunner/Node.ts"
export * as SqliteClient from "./SqliteClient.ts"
export * as SqliteSessionStore from "./sessionStore/Sqlite.ts"
