export * as SqlSessionStore from "./SqlSessionStore.ts"
