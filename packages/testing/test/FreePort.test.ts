/**
 * FreePort: a port below the ephemeral range that a server can then listen on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as net from "node:net"
import { FreePort } from "../src/index.ts"

const listen = (port: number) =>
  Effect.acquireRelease(
    Effect.callback<net.Server, Error>((resume) => {
      const server = net.createServer()
      server.once("error", (error) => resume(Effect.fail(error)))
      server.listen(port, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )

describe("FreePort", () => {
  it.effect("draws ports below the ephemeral range, each one a server then listens on", () =>
    Effect.scoped(Effect.gen(function*() {
      const ports = yield* Effect.forEach(Array.from({ length: 20 }), () => FreePort.make)
      for (const port of ports) {
        assert.isTrue(port >= 20_000 && port <= 32_767, `port ${port}`)
        const server = yield* listen(port)
        assert.strictEqual((server.address() as net.AddressInfo).port, port)
      }
    })))
})
