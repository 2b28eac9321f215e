/**
 * The public Sandbox conformance suite against VirtualSandbox, every optional capability included:
 * once with the interpreter on this thread (the default), once on a `WorkerPool` (docs/decisions/0093).
 *
 * The suite's timeout test runs an endless `while true; do :; done` under a 300 ms timeout. With
 * the hardened defaults that loop ends first, after 10,000 commands, with exit code 126 (tested in
 * VirtualSandbox.test.ts), so this run raises the command and loop limits: what is checked here
 * is that the call's timeout is honoured even by a loop that never yields. The suite mounts
 * directories it makes under the OS temporary directory, and /dev: those are the mount roots.
 * The pool is one for the whole file, as a program keeps one for all its sessions.
 */
import * as SandboxConformance from "@condukt/testing/SandboxConformance"
import { tmpdir } from "node:os"
import { afterAll } from "vitest"
import * as VirtualSandbox from "../src/VirtualSandbox.ts"
import * as WorkerPool from "../src/WorkerPool.ts"

const options: VirtualSandbox.Options = {
  limits: { maxCommands: 1_000_000_000, maxLoopIterations: 1_000_000_000 },
  mountRoots: [tmpdir(), "/dev"]
}

SandboxConformance.run("VirtualSandbox", () => VirtualSandbox.layer(options), { glob: true, grep: true, mount: true })

const pool = WorkerPool.makeUnsafe({ maxWorkers: 4 })
afterAll(() => pool.close())

SandboxConformance.run(
  "VirtualSandbox on a WorkerPool",
  () => VirtualSandbox.layer({ ...options, workers: pool }),
  { glob: true, grep: true, mount: true }
)
