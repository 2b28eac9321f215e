/**
 * Main — the `condukt` program once `bin` has accepted the Node.js: Node's services, the process's
 * arguments, and exit codes (0 success, 1 run failed or an unexpected error, 2 usage or validation
 * error, 130 on Ctrl-C after the run's scope closed, so no process it started survives it). `Cli.main`
 * prints every message itself, so the runtime reports nothing more.
 */
// @effect/platform-node-shared, not @effect/platform-node, whose `redis` peer npm installs with it (ADR 0053).
import * as NodeChildProcessSpawner from "@effect/platform-node-shared/NodeChildProcessSpawner"
import * as NodeFileSystem from "@effect/platform-node-shared/NodeFileSystem"
import * as NodePath from "@effect/platform-node-shared/NodePath"
import * as NodeRuntime from "@effect/platform-node-shared/NodeRuntime"
import * as NodeStdio from "@effect/platform-node-shared/NodeStdio"
import * as NodeTerminal from "@effect/platform-node-shared/NodeTerminal"
// The modules, not `effect`'s index, which loads every module of the package (`version` would pay for it).
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Cli from "./Cli.ts"

/** What @effect/platform-node's NodeServices.layer provides, from the shared modules. */
const NodeServices = Layer.provideMerge(
  NodeChildProcessSpawner.layer,
  Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeStdio.layer, NodeTerminal.layer)
)

Cli.main(process.argv.slice(2), { stderrIsTTY: process.stderr.isTTY === true, stdinIsTTY: process.stdin.isTTY === true }).pipe(
  Effect.provide(NodeServices),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    teardown: (exit, onExit) => {
      if (Exit.isSuccess(exit)) return onExit(0)
      if (Cause.hasInterruptsOnly(exit.cause)) return onExit(130)
      const error = Cause.findErrorOption(exit.cause)
      onExit(error._tag === "Some" && error.value instanceof Cli.Exit ? error.value.code : 1)
    }
  })
)
