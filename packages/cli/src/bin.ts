#!/usr/bin/env node
/**
 * bin — the `condukt` executable: on a Node.js older than the packages need, one sentence on
 * stderr and exit 1; otherwise `Main`, loaded only then (its imports are what an old Node fails on),
 * with Node's compile cache on (`module.enableCompileCache`: the modules' compiled code kept on
 * disk, in `NODE_COMPILE_CACHE` or the temporary directory, so a command after the first one
 * skips most of compiling them; `NODE_DISABLE_COMPILE_CACHE=1` turns it off).
 */
import * as Module from "node:module"
import { refusal } from "./internal/nodeVersion.ts"

const refused = refusal(process.versions.node)
if (refused === undefined) {
  Module.enableCompileCache()
  await import("./Main.ts")
} else {
  process.stderr.write(`${refused}\n`)
  process.exitCode = 1
}
