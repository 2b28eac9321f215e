/**
 * The smallest program bench/browser-bundle.ts weighs: an agent with the coding tools in a
 * VirtualSandbox, on @condukt/core and @condukt/sandbox-virtual alone — what a browser
 * application ships of Condukt before it adds a model provider (the run needs a `Model`).
 */
import { Agent, Session, Tools } from "@condukt/core"
import { VirtualSandbox } from "@condukt/sandbox-virtual"
import { Effect } from "effect"

const agent = Agent.make({ name: "keeper", model: "test:scripted", tools: Tools.coding })

/** One run of the agent in a fresh virtual sandbox; its answer's text. */
export const run = (prompt: string) =>
  Effect.scoped(
    Effect.flatMap(
      Session.start(agent, { sandbox: VirtualSandbox.layer({ defenseInDepth: false }) }),
      (session) => Effect.map(session.run(prompt), (result) => result.text)
    )
  )
