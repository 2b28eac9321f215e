import { describe } from "@effect/vitest"
import { Effect } from "effect"
import * as SessionStore from "../src/SessionStore.ts"
import { conformance } from "../../node/test/sessionStore/conformance.ts"

describe("SessionStore.layerMemory", () => {
  conformance((f) => Effect.flatMap(SessionStore.SessionStore, f).pipe(Effect.provide(SessionStore.layerMemory)))
})
