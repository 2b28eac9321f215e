import { describe } from "@effect/vitest"
import { Effect } from "effect"
import * as SessionStore from "../src/SessionStore.ts"
import { conformance } from "@condukt/testing/SessionStoreConformance"

describe("SessionStore.layerMemory", () => {
  conformance((f) => Effect.flatMap(SessionStore.SessionStore, f).pipe(Effect.provide(SessionStore.layerMemory)))
})
