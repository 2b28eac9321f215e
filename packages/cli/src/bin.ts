#!/usr/bin/env node
/**
 * bin — the `condukt` executable: on a Node.js older than the packages need, one sentence on
 * stderr and exit 1; otherwise `Main`, loaded only then (its imports are what an old Node fails on).
 */
import { refusal } from "./internal/nodeVersion.ts"

const refused = refusal(process.versions.node)
if (refused === undefined) await import("./Main.ts")
else {
  process.stderr.write(`${refused}\n`)
  process.exitCode = 1
}
