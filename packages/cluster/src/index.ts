export * as ClusterSessions from "./ClusterSessions.ts"
export * as Runner from "./Runner.ts"
export * as SessionEntity from "./SessionEntity.ts"
export * as SqlSessionStore from "./SqlSessionStore.ts"
