/**
 * The Studio's assets in the package are the page's sources built: the committed generated module
 * (src/internal/studioAssets.ts) is what studio/build.ts writes from the sources now, byte for
 * byte, so an edit of the page without a build (or of the module by hand) cannot ship. And what
 * it serves is one page, one script, one stylesheet, fetching nothing from anywhere else.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { build, OUTPUT, render } from "../studio/build.ts"
import * as assets from "../src/internal/studioAssets.ts"

describe("the Studio's built assets", () => {
  it.live("the committed module is a fresh build of the page's sources (run node packages/server/studio/build.ts after an edit)", () =>
    Effect.gen(function*() {
      const fresh = yield* Effect.promise(() => build())
      assert.strictEqual(fs.readFileSync(OUTPUT, "utf8"), render(fresh))
    }), 60_000)

  it("the page loads its own script and stylesheet and nothing from another origin", () => {
    const references = [...assets.html.matchAll(/(?:src|href)="([^"]*)"/g)].map((match) => match[1])
    assert.deepStrictEqual(references, ["/studio/studio.css", "/studio/studio.js"])
    assert.isFalse(/https?:\/\//.test(assets.css))
    assert.isFalse(/\bimport\s*\(|\bimport\s+[^(]*from\s*["']/.test(assets.js))
  })
})
