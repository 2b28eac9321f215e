/**
 * A Condukt server: an agent served over HTTP on loopback, used the way any client would use it,
 * with `fetch`: start a session, run a prompt, answer the approval its Bash call waits for, follow
 * the session's events and resume them after the last one seen. A scripted TestModel plays the
 * model; Bash really runs. docs/server.md
 */
import { Agent, Tools } from "@condukt/core"
import { Condukt } from "@condukt/node"
import { Auth, Server } from "@condukt/server"
import { TestModel } from "@condukt/testing"
import { Console, Effect, Fiber, Layer } from "effect"

const janitor = Agent.make({
  name: "janitor",
  model: "anthropic:claude-sonnet-4-6",
  tools: [Tools.Bash],
  approvals: { ask: ["Bash"] }
})

const program = Effect.gen(function*() {
  const { url } = yield* Server.listen(Server.layer({ agents: { janitor }, auth: Auth.bearer({ "tok-ada": "ada" }) }))

  // The client's side: plain HTTP with a bearer token.
  const api = (path: string, init: { body?: unknown; headers?: Record<string, string> } = {}) =>
    Effect.promise(() =>
      fetch(url + path, {
        method: init.body === undefined ? "GET" : "POST",
        headers: { authorization: "Bearer tok-ada", "content-type": "application/json", ...init.headers },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
      })
    )
  const json = (response: Response) => Effect.promise(() => response.json())

  const session = yield* Effect.flatMap(api("/sessions", { body: { agent: "janitor", id: "cleanup" } }), json)
  yield* Console.log(`started ${session.id} (${session.agent}) for ${session.principal}`)

  // The run waits for a person: its reply comes once the Bash call is approved.
  const run = yield* Effect.forkChild(Effect.flatMap(api("/sessions/cleanup/runs", { body: { prompt: "Clean up the build" } }), json))
  let pending: Array<{ callId: string; tool: string; input: unknown }> = []
  while (pending.length === 0) pending = yield* Effect.flatMap(api("/sessions/cleanup/approvals"), json)
  for (const call of pending) {
    yield* Console.log(`waiting: ${call.tool} ${JSON.stringify(call.input)}`)
    const answered = yield* api(`/sessions/cleanup/approvals/${call.callId}`, { body: { approved: true, reason: "only an echo" } })
    yield* Console.log(`approved: ${answered.status}`)
  }
  const outcome = yield* Fiber.join(run)
  yield* Console.log(`run ${outcome.outcome} in ${outcome.turns} turns: ${outcome.text}`)

  // The session's events as Server-Sent Events, each `id` its number; a client that comes back
  // with `Last-Event-ID` gets exactly the ones after it.
  const frames = (text: string) => text.split("\n\n").filter((frame) => frame.startsWith("id: "))
  const read = (lastEventId: string) =>
    Effect.promise(async () => {
      const response = await fetch(`${url}/sessions/cleanup/events`, {
        headers: { authorization: "Bearer tok-ada", "last-event-id": lastEventId },
        signal: AbortSignal.timeout(500)
      })
      // The stream stays open for the session's next events: read up to the run's last one.
      let text = ""
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
      while (!text.includes(`id: ${outcome.lastEventId}\n`)) text += (await reader.read()).value ?? ""
      await reader.cancel()
      return frames(text).map((frame) => frame.split("\n")[1]!.slice("event: ".length))
    })
  yield* Console.log(`events after 0: ${(yield* read("0")).join(" ")}`)
  yield* Console.log(`events after 5: ${(yield* read("5")).join(" ")}`)
}).pipe(Effect.scoped)

Effect.runPromise(program.pipe(
  Effect.provide(Layer.mergeAll(
    TestModel.layer([
      TestModel.toolCall("Bash", { command: "echo cleaned" }),
      TestModel.text("Cleaned the build.")
    ]),
    Condukt.layer
  ))
))
