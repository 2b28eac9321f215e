/**
 * nodeClusterSocket — a runner's sharding over TCP, as `@effect/platform-node`'s
 * `NodeClusterSocket.layer({ storage: "byo" })` composes it, from `@effect/platform-node-shared`'s
 * socket protocol and server.
 *
 * Ours because `@effect/platform-node` declares a `redis` peer that npm installs with it, into every
 * project that installs this package (ADR 0053); the shared package holds the sockets without it.
 * Only what Runner uses: the storage is the caller's (mailboxes and runner list on its SqlClient),
 * runners watch each other's health by ping (no Kubernetes), messages are framed as Effect's
 * schema-binary serialization, with its default frame bound.
 */
import { layerClientProtocol, layerSocketServer } from "@effect/platform-node-shared/NodeClusterSocket"
import type { ConfigError } from "effect/Config"
import { type MessageStorage, RunnerHealth, Runners, type RunnerStorage, type Sharding, ShardingConfig, SocketRunner } from "effect/cluster"
import * as Layer from "effect/Layer"
import { RpcSerialization } from "effect/rpc"
import type { SocketServer } from "effect/socket"

/** What a runner or client is given: the sharding's settings over those of the environment. */
export interface Options<ClientOnly extends boolean> {
  readonly clientOnly?: ClientOnly | undefined
  readonly storage: "byo"
  readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
}

/** The storage a runner or client brings: the cluster's mailboxes and runner list. */
type Storage = MessageStorage.MessageStorage | RunnerStorage.RunnerStorage

/** How it fails: a bad sharding configuration, or, for a runner, its port not listening. */
type Failure<ClientOnly extends boolean> = ClientOnly extends true ? ConfigError : SocketServer.SocketServerError | ConfigError

/**
 * A runner (listening on its `runnerAddress`, pinging the others) or, with `clientOnly`, a client
 * that sends to the runners and listens for nothing.
 */
export const layer = <const ClientOnly extends boolean = false>(
  options: Options<ClientOnly>
): Layer.Layer<Sharding.Sharding | Runners.Runners, Failure<ClientOnly>, Storage> => {
  const sharding: Layer.Layer<Sharding.Sharding | Runners.Runners, SocketServer.SocketServerError, Storage | ShardingConfig.ShardingConfig | RpcSerialization.RpcSerialization> =
    options.clientOnly === true
      ? Layer.provide(SocketRunner.layerClientOnly, layerClientProtocol)
      : Layer.provide(SocketRunner.layer, [layerSocketServer, layerClientProtocol]).pipe(
        Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(layerClientProtocol)))
      )
  return sharding.pipe(
    Layer.provide(ShardingConfig.layerFromEnv(options.shardingConfig)),
    Layer.provide(RpcSerialization.layerSchemaBinary())
  ) as Layer.Layer<Sharding.Sharding | Runners.Runners, Failure<ClientOnly>, Storage>
}
