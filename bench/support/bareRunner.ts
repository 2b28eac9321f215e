/**
 * A runner process serving only the bare entity (bench/support/bareEntity.ts) on the SQLite file
 * `CLUSTER_DB`, listening on `PORT`, on the cluster layers a session runner uses; it prints a line
 * once up. Started by bench/support/clusterRunner.ts's `runner` for bench/cluster's floor.
 */
import { Runner } from "@condukt/cluster"
import { SqliteClient } from "@condukt/node"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Layer, References } from "effect"
import * as BareEntity from "./bareEntity.ts"

NodeRuntime.runMain(Layer.launch(
  Layer.effectDiscard(Console.log(`runner ${process.env["NAME"] ?? ""} up`)).pipe(
    Layer.provide(BareEntity.layer),
    Layer.provide(Runner.layerSharding({ port: Number(process.env["PORT"]) })),
    Layer.provide(SqliteClient.layer({ file: process.env["CLUSTER_DB"]!, synchronous: "normal" })),
    Layer.provide(Layer.succeed(References.MinimumLogLevel, "Warn"))
  )
))
