/**
 * The public Sandbox conformance suite against VirtualSandbox, every optional capability included.
 *
 * The suite's timeout test runs an endless `while true; do :; done` under a 300 ms timeout. With
 * the hardened defaults that loop ends first, after 10,000 commands, with exit code 126 (tested in
 * VirtualSandbox.test.ts), so this run raises the command and loop limits: what is checked here
 * is that the call's timeout is honoured even by a loop that never yields. The suite mounts
 * directories it makes under the OS temporary directory, and /dev: those are the mount roots.
 */
import * as SandboxConformance from "@condukt/testing/SandboxConformance"
import { tmpdir } from "node:os"
import * as VirtualSandbox from "../src/VirtualSandbox.ts"

SandboxConformance.run(
  "VirtualSandbox",
  () =>
    VirtualSandbox.layer({
      limits: { maxCommands: 1_000_000_000, maxLoopIterations: 1_000_000_000 },
      mountRoots: [tmpdir(), "/dev"]
    }),
  { glob: true, grep: true, mount: true }
)
