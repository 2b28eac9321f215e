/**
 * Setup of the `unit` project (vitest.config.ts): while a unit file runs, starting a process or
 * listening on a socket fails naming the call, so a file that needs either cannot stay in the inner
 * loop unnoticed: it goes in the `integration` list. The real functions come back after the file.
 */
import { afterAll } from "@effect/vitest"
import childProcess from "node:child_process"
import { syncBuiltinESMExports } from "node:module"
import net from "node:net"

export const refusal = (call: string) =>
  `${call} in a unit test: list this file under integration in vitest.config.ts (docs/decisions/0045-test-projects.md)`

const spawners = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const

interface Real {
  readonly childProcess: Partial<typeof childProcess>
  readonly listen: typeof net.Server.prototype.listen
}

/** The real functions, taken once per worker: unit files share a worker (`isolate: false`). */
const real: Real = (globalThis as { [key: symbol]: Real | undefined })[Symbol.for("condukt/unitGuard")] ??= {
  childProcess: Object.fromEntries(spawners.map((name) => [name, childProcess[name]])),
  listen: net.Server.prototype.listen
}

const refuse = (call: string) => () => {
  throw new Error(refusal(call))
}

Object.assign(childProcess, Object.fromEntries(spawners.map((name) => [name, refuse(`child_process.${name}`)])))
net.Server.prototype.listen = refuse("net.Server.listen")
syncBuiltinESMExports()

afterAll(() => {
  Object.assign(childProcess, real.childProcess)
  net.Server.prototype.listen = real.listen
  syncBuiltinESMExports()
})
