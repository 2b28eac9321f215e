/**
 * @condukt/server — Condukt sessions over HTTP (docs/server.md).
 */
export * as Api from "./Api.ts"
export * as Auth from "./Auth.ts"
export * as Limits from "./Limits.ts"
export * as Server from "./Server.ts"
export * as ServerError from "./ServerError.ts"
export * as ServerStore from "./ServerStore.ts"
export * as SqlServerStore from "./SqlServerStore.ts"
export * as Studio from "./Studio.ts"
export * as UiMessageStream from "./UiMessageStream.ts"
export * as WorkflowRuns from "./WorkflowRuns.ts"
