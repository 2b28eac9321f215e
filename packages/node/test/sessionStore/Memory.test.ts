/**
 * The memory store (`@condukt/core`'s `SessionStore.makeMemory`) through the approval-log suite the
 * durable stores run, so the three keep one behaviour: it is the reference.
 */
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import * as SessionStore from "@condukt/core/SessionStore"
import { approvalConformance } from "@condukt/testing/SessionStoreConformance"

describe("SessionStore.makeMemory", () => {
  approvalConformance((f, options) => Effect.suspend(() => f(SessionStore.makeMemory(options))))
})
