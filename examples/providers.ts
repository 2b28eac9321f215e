/**
 * Providers and base URLs: an agent names its model as "provider:model", and a provider layer
 * given `baseUrl` sends that provider's requests elsewhere: a gateway, a proxy, a local server.
 * Here a small OpenAI-compatible server on loopback stands in for Ollama and streams the reply.
 * docs/providers.md
 */
import { Agent, Session } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { OpenAi } from "@condukt/providers"
import { NodeRuntime } from "@effect/platform-node-shared"
import { Console, Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

// What an OpenAI-compatible server streams: Chat Completions chunks as server-sent events.
const chunk = (delta: object, finishReason: string | null = null) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`

const received: Array<string> = []
const localServer = Effect.acquireRelease(
  Effect.callback<http.Server>((resume) => {
    const server = http.createServer((request, response) => {
      let body = ""
      request.on("data", (part) => (body += part))
      request.on("end", () => {
        received.push(`${request.method} ${request.url} model=${JSON.parse(body).model}`)
        response.writeHead(200, { "content-type": "text/event-stream" })
        response.end(chunk({ role: "assistant", content: "Hello from " }) + chunk({ content: "a local model." }) + chunk({}, "stop") + "data: [DONE]\n\n")
      })
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
)

const greeter = Agent.make({ name: "greeter", model: "ollama:llama3.2" })

const program = Effect.gen(function*() {
  const server = yield* localServer
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  // This layer wins over Condukt.layer's own `ollama` provider (which reads OLLAMA_BASE_URL).
  const ollama = OpenAi.layerCompatible("ollama", { baseUrl }).pipe(Layer.provide(FetchHttpClient.layer))
  const result = yield* Effect.scoped(Effect.flatMap(Session.start(greeter), (session) => session.run("Say hello"))).pipe(
    Effect.provide(ollama)
  )
  yield* Console.log(`The server received: ${received.join(", ")}`)
  yield* Console.log(`The agent answered: ${result.text}`)
}).pipe(Effect.scoped, Effect.provide(Condukt.layer))

NodeRuntime.runMain(program)
