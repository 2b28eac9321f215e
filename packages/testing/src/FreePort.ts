/**
 * FreePort — a loopback port nothing listens on, for a server a test starts in another process
 * (a cluster runner, a served workflow) whose port must be known before it listens.
 *
 * A port asked of the OS (`listen(0)`) comes from the ephemeral range, the same range every
 * outgoing connection's local port is drawn from: between the moment the port is found free and
 * the moment the server binds it, a connection of the loaded suite could take it, and the server's
 * listen failed (`EADDRINUSE`, seen as a cluster runner's `SocketServerError: Open`). So the port
 * is drawn at random below that range (20000–32767 on Linux's default 32768–60999, and below
 * other systems' 49152), where neither connections nor `listen(0)` reach, and checked free by a
 * listen of its own; only another caller of this drawing the same port in the same moment could
 * take it.
 *
 * Node's `net` is loaded when a port is drawn (`process.getBuiltinModule`) rather than imported:
 * `@condukt/testing` also bundles for a browser page or worker (ADR 0094).
 */
import { Effect } from "effect"

const LOWEST = 20_000
const HIGHEST = 32_767

/** Whether `port` on 127.0.0.1 could be listened on now. */
const free = (port: number): Effect.Effect<boolean> =>
  Effect.callback<boolean>((resume) => {
    const server = process.getBuiltinModule("node:net").createServer()
    server.once("error", () => resume(Effect.succeed(false)))
    server.listen(port, "127.0.0.1", () => server.close(() => resume(Effect.succeed(true))))
  })

/**
 * A port on 127.0.0.1 that nothing listens on now, outside the ephemeral range; dies after 100
 * ports drawn were all taken.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<number> = Effect.gen(function*() {
  for (let tries = 0; tries < 100; tries++) {
    const port = LOWEST + Math.floor(Math.random() * (HIGHEST - LOWEST + 1))
    if (yield* free(port)) return port
  }
  return yield* Effect.die(new Error(`FreePort: 100 ports between ${LOWEST} and ${HIGHEST} were all taken`))
})
