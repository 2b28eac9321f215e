/**
 * SandboxConformance — the one set of tests every `Sandbox` backend must pass, public so users
 * can run it against their own sandboxes.
 *
 * `run(name, layer, capabilities)` registers a `describe` block of `@effect/vitest` tests; call it
 * at the top level of a test file. Each test builds the layer afresh (`Layer.fresh`, in the
 * test's scope), so no test sees another's files: a layer that owns its state (an in-memory
 * tree, a temporary directory acquired in the layer) is enough, and a function returning a layer
 * is called once per test. Everything goes through the contract: files are seeded with
 * `writeFile`, checked with `read`, `glob` and `exec`; nothing assumes a host filesystem except
 * the mount tests, which mount a real host directory made under the OS temporary directory, and
 * the hostile-file tests (a named pipe, a device), which reach the host as `hostFiles` says or
 * through a mount of it and of `/dev` (a sandbox that bounds runtime mounts must allow both, as
 * VirtualSandbox's `mountRoots` can).
 *
 * Capabilities say which optional operations the backend implements: each one flagged `true` is
 * tested, each one flagged `false` must fail with `NotSupported`. Tests run on the live clock
 * (`it.live`) because backends time commands out with real time.
 */
import { Sandbox } from "@condukt/core"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, type Scope } from "effect"
import { outcome } from "./internal/conformance.ts"
import * as Exec from "./internal/conformanceExec.ts"
import * as Files from "./internal/conformanceFiles.ts"
import * as Mount from "./internal/conformanceMount.ts"
import * as Search from "./internal/conformanceSearch.ts"
import type { Capabilities } from "./internal/capabilities.ts"

/** @since 0.1.0 @category models */
export type { Capabilities }

/**
 * Registers the conformance tests for one backend under `describe(name)`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <E>(
  name: string,
  layer: Layer.Layer<Sandbox.Sandbox, E> | (() => Layer.Layer<Sandbox.Sandbox, E>),
  capabilities: Capabilities
): void => {
  // Layer.fresh: under an enclosing memo map (a surrounding `layer(...)`) the same layer value
  // would otherwise be built once and shared by every test.
  const fresh = Effect.suspend(() => Layer.build(Layer.fresh(typeof layer === "function" ? layer() : layer)))
  const test = <A, E2>(title: string, body: (sandbox: Sandbox.Service) => Effect.Effect<A, E2, Scope.Scope>) =>
    it.live(title, () => Effect.flatMap(fresh, (context) => body(Context.get(context, Sandbox.Sandbox))))

  const notSupported = (
    operation: string,
    call: (sandbox: Sandbox.Service) => Effect.Effect<unknown, Sandbox.SandboxError>
  ) =>
    test(`${operation} fails with NotSupported`, (sandbox) =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* outcome(Effect.asVoid(call(sandbox))), {
          reason: "NotSupported",
          message: `The active sandbox does not support ${operation}`
        })
      }))

  describe(name, () => {
    const suite = { capabilities, notSupported, test }
    Files.register(suite)
    Exec.register(suite)
    Search.register(suite)
    Mount.register(suite)
  })
}
