/**
 * hostMount.browser — what a browser build gets in place of hostMount.ts. The package imports its
 * host mounts as `#hostMount`, which its package.json's `imports` maps to this module under the
 * `browser` condition (esbuild with `platform: "browser"`, Vite and webpack building for a
 * browser) and to hostMount.ts otherwise: no plugin, nothing for an application to configure.
 *
 * A browser has no host directory to mount, so a mount at start fails `NotSupported` and one at
 * run time `OutsideAllowedPaths` (no root is allowed; `admit` can fail no other way), and nothing
 * here imports `node:fs`, `node:path` or just-bash's `OverlayFs`/`ReadWriteFs` (which just-bash's
 * browser build does not have). ADR 0094.
 */
import { Sandbox } from "@condukt/core"
import { Effect } from "effect"
import type * as HostMount from "./hostMount.ts"

const notSupported = new Sandbox.NotSupported({ operation: "host mounts in a browser" })

/** The path as given: a browser has no working directory to resolve it against. */
export const resolve: typeof HostMount.resolve = (hostPath) => hostPath

/** No root: nothing may be mounted at run time. */
export const defaultRoots: typeof HostMount.defaultRoots = () => []

/** `OutsideAllowedPaths` whatever the roots: no host path is admitted. */
export const admit: typeof HostMount.admit = (hostPath, roots) =>
  Effect.fail(new Sandbox.OutsideAllowedPaths({ path: hostPath, allowed: [...roots] }))

/** `NotSupported`: there is no host directory to open. */
export const open: typeof HostMount.open = () => Effect.fail(notSupported)
