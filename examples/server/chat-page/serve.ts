/**
 * The chat page, served: `node examples/server/chat-page/serve.ts`, then open the URL it prints.
 * Chat.tsx is bundled with esbuild, and one node:http server on loopback serves the page and the
 * Condukt server's routes (page.ts). The agent runs Bash in a virtual sandbox (nothing on this
 * machine runs) and every call waits for the page's Approve or Deny. With ANTHROPIC_API_KEY set,
 * Claude plays the model; otherwise a scripted model answers each message with one Bash call.
 * Ctrl-C stops it. examples/server/README.md
 */
import { Agent, Model, Tools } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { Auth, Server } from "@condukt/server"
import { TestModel } from "@condukt/testing"
import { NodeRuntime } from "@effect/platform-node-shared"
import * as esbuild from "esbuild"
import { Console, Effect, Layer } from "effect"
import * as path from "node:path"
import { serve } from "./page.ts"

const token = process.env.CHAT_TOKEN ?? "dev-token"
const real = process.env.ANTHROPIC_API_KEY ? "anthropic:claude-sonnet-4-6" : undefined

const janitor = Agent.make({
  name: "janitor",
  model: real ?? "test:scripted",
  system: "You keep a workspace tidy with Bash.",
  tools: [Tools.Bash],
  sandbox: VirtualSandbox.layer(),
  approvals: { ask: ["Bash"] }
})

// The scripted model serves any number of chats: a Bash call after each message, then a sentence.
const scripted = Layer.succeed(
  Model.Model,
  TestModel.callThenAnswer("Bash", { command: "mkdir -p build && rm -r build && echo removed build/" }, "That was the Bash call; its result is above.")
)

const bundle = Effect.promise(() =>
  esbuild.build({
    entryPoints: [path.join(import.meta.dirname, "Chat.tsx")],
    bundle: true,
    write: false,
    format: "esm",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    minify: true
  })
).pipe(Effect.map((result) => result.outputFiles.map((file) => file.text).join("")))

const program = Effect.gen(function*() {
  const handler = yield* Server.handler(Server.layer({ agents: { janitor }, defaultAgent: "janitor", auth: Auth.bearer({ [token]: "you" }) }))
  const url = yield* serve({ handler, app: yield* bundle, token, port: Number(process.env.PORT ?? 8787) })
  yield* Console.log(`The chat page is on ${url} (${real ?? "a scripted model"}); Ctrl-C stops it.`)
  yield* Effect.never
}).pipe(Effect.scoped, Effect.provide(real === undefined ? Layer.merge(scripted, Condukt.layer) : Condukt.layer))

NodeRuntime.runMain(program)
