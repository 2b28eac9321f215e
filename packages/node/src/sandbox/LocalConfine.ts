/**
 * LocalConfine — what `LocalSandbox.layer({ confine })` asks of the OS: the confinement worked out
 * and probed when the sandbox is built (failing closed), the rules its file methods follow read
 * off the same mounts (`ConfinedPaths`), and its launcher held by the scopes that build it.
 */
import * as nodePath from "node:path"
import { Effect, Option, Result, Scope } from "effect"
import * as Sandbox from "@condukt/core/Sandbox"
import * as Confine from "./Confine.ts"
import * as ConfinedPaths from "./ConfinedPaths.ts"
import * as Launcher from "./Launcher.ts"

/** A sandbox's confinement: how its commands run, and what its file methods may touch (the same mounts, read). */
export interface Confinement {
  readonly plan: Confine.Plan
  readonly paths: ConfinedPaths.Paths
}

/**
 * The confined commands' launcher (`Launcher`) held by the scope building the sandbox, when there
 * is one: its last holder's scope closing stops it. Built outside any scope (`make` without one),
 * it lives as long as the program (it dies with it).
 */
export const hold = (confined: Confinement | undefined): Effect.Effect<void> => {
  const launcher = confined?.plan.launcher
  if (launcher === undefined) return Effect.void
  return Effect.flatMap(Effect.serviceOption(Scope.Scope), (scope) =>
    Option.isNone(scope)
      ? Launcher.retain(launcher)
      : Effect.andThen(Launcher.retain(launcher), Scope.addFinalizer(scope.value, Launcher.release(launcher))))
}

/**
 * The confinement `options` ask for, checked by running bubblewrap once: one that cannot be had
 * fails here, naming what is missing, so no command ever runs unconfined by surprise.
 */
export const confinement = (
  options: { readonly confine?: boolean | Confine.Options | undefined; readonly allowedPaths?: ReadonlyArray<string> | undefined },
  cwd: string,
  env: Readonly<Record<string, string>>
): Effect.Effect<Confinement | undefined, Sandbox.SandboxError> => {
  if (options.confine === undefined || options.confine === false) return Effect.succeed(undefined)
  const cannot = (why: string) => new Sandbox.SandboxError({ method: "make", reason: new Sandbox.Failed({ description: `Cannot confine commands: ${why}` }) })
  if (process.platform !== "linux") {
    return Effect.fail(cannot(`confinement runs on Linux (bubblewrap); ${process.platform} is not supported yet`))
  }
  const roots = [cwd, ...(options.allowedPaths ?? []).map((root) => nodePath.resolve(cwd, root))]
  const requested = options.confine === true ? {} : options.confine
  // Working out the mounts reads the host (real paths, the filter's file): a failure there is this
  // build's typed failure, not a defect.
  const planned = Effect.try({
    try: () => Confine.plan(requested, cwd, roots),
    catch: (cause) => cannot(`the sandbox's mounts could not be worked out (${cause instanceof Error ? cause.message : String(cause)})`)
  }).pipe(Effect.flatMap(Result.match({ onFailure: (missing) => Effect.fail(cannot(missing)), onSuccess: Effect.succeed })))
  // The file methods' rules, read off the mounts the commands get: one the reading cannot follow
  // fails the build (the sandbox would otherwise have two sets of rules).
  const ruled = Effect.flatMap(planned, (plan) =>
    Result.match(ConfinedPaths.make(plan, cwd), {
      onFailure: (why) => Effect.fail(cannot(`the file tools' rules could not be read off the sandbox's mounts (${why})`)),
      onSuccess: (paths): Effect.Effect<Confinement> => Effect.succeed({ plan, paths })
    }))
  // The probe runs as every command will (its cgroup included), so a host that cannot is found now.
  return Effect.flatMap(ruled, ({ plan, paths }) =>
    Confine.runOnce(plan, cwd, "true", { cwd, env, timeoutMs: 30_000 }).pipe(
    Effect.mapError((error) => cannot(`${plan.bwrap} did not start (${error.message}); ${Confine.INSTALL_HINT}`)),
    Effect.flatMap((result) => {
      if (result.exitCode === 0) return Effect.succeed({ plan, paths })
      const said = result.output.trim() || `exit code ${result.exitCode}`
      // 126/127: the shell that hands bwrap its filter could not run it.
      return Effect.fail(cannot(
        result.exitCode === 127 || result.exitCode === 126
          ? `${plan.bwrap} did not start (${said}); ${Confine.INSTALL_HINT}`
          : said.includes("cgroup.procs")
          ? `a command cannot join its cgroup (${said}); set maxProcesses: false, or name a delegated cgroup in cgroup`
          : `${plan.bwrap} cannot make a sandbox here (${said}); ` +
            "it needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)"
      ))
    })
  ))
}

