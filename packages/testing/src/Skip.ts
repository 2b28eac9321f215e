/**
 * Skip — a test, or a `describe` block, skipped with its reason on record, so a run's report names
 * each skipped test and why, not only how many.
 *
 * Vitest's JSON report (`.vitest-results.json`) counts skipped tests but keeps no reason for them;
 * it keeps each test's `meta`, and a `describe`'s meta reaches every test in it. `when(reason)` is
 * the options that skip when a reason is given and write it as `meta.skipped`: pass them where
 * `skipIf` would go (`describe(name, Skip.when(why), () => …)`, `it.effect(name, f, Skip.when(why))`).
 * What only the running test can find out (a filesystem without the attribute it needs) skips it
 * from inside with `now(reason)`, recorded the same way. The repository's `.ci/run` prints each
 * skipped test with its reason above its closing line, and a skipped test with none as "no reason
 * recorded".
 */
import { type TestOptions, TestRunner } from "@effect/vitest"
import { Effect } from "effect"

declare module "vitest" {
  interface TaskMeta {
    /** Why the test is skipped (`Skip.when`, `Skip.now`). */
    skipped?: string
  }
}

/**
 * Options that skip a test, or every test of a `describe`, when `reason` is given (why it cannot run
 * here: what is missing), carrying the reason in the report; with no reason, options that change nothing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const when = (reason: string | undefined): TestOptions => (reason === undefined ? {} : { skip: true, meta: { skipped: reason } })

/**
 * Skips the running test from inside it, recording `reason` as `when` does; the test ends there
 * (its scope's finalizers run). Outside a test it dies saying so.
 *
 * @since 0.1.0
 * @category combinators
 */
export const now = (reason: string): Effect.Effect<never> =>
  Effect.suspend(() => {
    const test = TestRunner.getCurrentTest()
    if (test === undefined) return Effect.die(new Error(`Skip.now outside a test: ${reason}`))
    test.meta.skipped = reason
    // Throws vitest's own skip signal, which the test's promise rejects with.
    test.context.skip(reason)
    return Effect.die(new Error(`Skip.now: vitest did not skip the test: ${reason}`))
  })
