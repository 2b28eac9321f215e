import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Result } from "effect"
import * as GrepFiles from "../packages/core/src/internal/grepFiles.ts"
const tree = process.argv[2]!
const cs = process.argv[4] !== "i"
NodeRuntime.runMain(Effect.gen(function*() {
  for (let i = 0; i < 3; i++) {
    const t = performance.now()
    const r = yield* GrepFiles.search({ root: tree, rootIsFile: false, display: ".", glob: "**/*", pattern: Result.getOrThrow(GrepFiles.compile(process.argv[3]!, cs)), limit: 1e9, report: (a) => a.slice(tree.length + 1) })
    console.log(r.matches.length, (performance.now() - t).toFixed(0), "ms")
  }
}).pipe(Effect.provide(NodeServices.layer)))
