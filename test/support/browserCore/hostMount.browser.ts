/**
 * What a browser build gets in place of @condukt/sandbox-virtual's internal/hostMount.ts (build.ts
 * swaps it in): a browser has no host directory to mount, so a mount at start fails `NotSupported`
 * and one at run time `OutsideAllowedPaths` (no root is allowed; `admit` can fail no other way), and
 * nothing here imports `node:fs`, `node:path` or just-bash's `OverlayFs`/`ReadWriteFs` (which
 * just-bash's browser build does not have). It belongs in the package itself, chosen by its
 * package.json's `browser` field (ADR 0094); until then the test's build swaps it in.
 */
import { Sandbox } from "@condukt/core"
import { Effect } from "effect"
import type * as HostMount from "../../../packages/sandbox-virtual/src/internal/hostMount.ts"

const notSupported = new Sandbox.NotSupported({ operation: "host mounts in a browser" })

export const resolve: typeof HostMount.resolve = (hostPath) => hostPath

export const defaultRoots: typeof HostMount.defaultRoots = () => []

export const admit: typeof HostMount.admit = (hostPath, roots) =>
  Effect.fail(new Sandbox.OutsideAllowedPaths({ path: hostPath, allowed: [...roots] }))

export const open: typeof HostMount.open = () => Effect.fail(notSupported)
