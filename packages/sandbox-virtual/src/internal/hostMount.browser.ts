/**
 * hostMount.browser — what a browser build gets in place of hostMount.ts (the package.json's
 * `browser` field maps one to the other, for bundlers that build for a browser): a browser has no
 * host directory to mount, so a mount at start fails `NotSupported` and one at run time
 * `OutsideAllowedPaths` (no root is allowed; `admit` can fail no other way), and nothing here
 * imports `node:fs`, `node:path` or just-bash's `OverlayFs`/`ReadWriteFs` (which just-bash's
 * browser build does not have). ADR 0094.
 */
import { Sandbox } from "@condukt/core"
import { Effect } from "effect"
import type * as HostMount from "./hostMount.ts"

const notSupported = new Sandbox.NotSupported({ operation: "host mounts in a browser" })

export const resolve: typeof HostMount.resolve = (hostPath) => hostPath

export const defaultRoots: typeof HostMount.defaultRoots = () => []

export const admit: typeof HostMount.admit = (hostPath, roots) =>
  Effect.fail(new Sandbox.OutsideAllowedPaths({ path: hostPath, allowed: [...roots] }))

export const open: typeof HostMount.open = () => Effect.fail(notSupported)
