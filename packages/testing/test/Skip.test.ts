import { assert, describe, it } from "@effect/vitest"
import * as Skip from "../src/Skip.ts"

describe("Skip.when", () => {
  it("skips with the reason as the test's meta when a reason is given, and changes nothing without one", () => {
    assert.deepStrictEqual(
      { given: Skip.when("bubblewrap cannot be installed: not root"), none: Skip.when(undefined) },
      { given: { skip: true, meta: { skipped: "bubblewrap cannot be installed: not root" } }, none: {} }
    )
  })

  // The same options with `skip` turned off, so the block runs and its test reads what the report would.
  describe("a describe block given the options", { ...Skip.when("no cgroup with the pids controller"), skip: false }, () => {
    it("hands the reason to each of its tests' meta, which the JSON report keeps", ({ task }) => {
      assert.deepStrictEqual({ mode: task.mode, skipped: task.meta.skipped }, { mode: "run", skipped: "no cgroup with the pids controller" })
    })
  })
})
