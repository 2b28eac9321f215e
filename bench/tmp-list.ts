import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Result } from "effect"
import * as GrepFiles from "../packages/core/src/internal/grepFiles.ts"
const tree = process.argv[2]!
NodeRuntime.runMain(Effect.gen(function*() {
  const r = yield* GrepFiles.search({ root: tree, rootIsFile: false, display: ".", glob: "**/*", pattern: Result.getOrThrow(GrepFiles.compile(process.argv[3]!, true)), limit: 1e9, report: (a) => a.slice(tree.length + 1) })
  console.log(r.matches.map((m) => `${m.path}:${m.lineNumber}`).sort().join("\n"))
}).pipe(Effect.provide(NodeServices.layer)))
