/**
 * What the durable run tests share (Durable.test.ts, Durable.retry.test.ts): a database file of
 * its own per test, a run of a workflow source on it, and a two-step workflow whose steps call a
 * tool counting its calls in memory (what a step ran is what it counted).
 */
import { Tool } from "@condukt/core"
import { SqliteClient } from "@condukt/node"
import { TempDir } from "@condukt/testing"
import { Effect, Schema } from "effect"
import * as path from "node:path"
import { Durable, Workflow } from "../src/index.ts"

/** Two tool steps, `second` after `first`, each calling `count`; the run's output is both outputs. */
export const SOURCE = `
workflow "count" {
  input "who" {
    type = "string"
    default = "Ada"
  }
  tool "first" {
    id = "count"
    args = { label = "first \${input.who}" }
  }
  tool "second" {
    needs = ["first"]
    id = "count"
    args = { label = "second" }
  }
  output = [task.first.output, task.second.output]
}
`

/** A tool counting its calls, in memory: what a step ran is what it counted. */
export const counter = () => {
  const calls: Array<string> = []
  const tool = Tool.make("count", {
    description: "Counts its calls",
    parameters: Schema.Struct({ label: Schema.String }),
    call: ({ label }) => Effect.sync(() => (calls.push(label), `${label} #${calls.length}`))
  })
  return { calls, tool }
}

/** A database file in a fresh directory, removed with the scope. */
export const database = Effect.map(TempDir.make("durable-"), (dir) => path.join(dir, "runs.db"))

/** `source` run as a durable run on the database `file` (named `runs.db` in errors), on the virtual sandbox unless `options` give one. */
export const runIn = (file: string, source: string, options: Omit<Durable.Options, "location" | "file">) =>
  Effect.flatMap(Workflow.parse(source, "count.hcl"), (document) =>
    Durable.run(document, { sandbox: "virtual", ...options, location: "runs.db", file: "count.hcl" }).pipe(
      Effect.provide(SqliteClient.layer({ file }))
    ))
