/**
 * A virtual sandbox's runtime mount reaches the session's MCP servers (issue 29 item 2, ADR 0063):
 * a server that keeps the roots it read is told they changed (`notifications/roots/list_changed`)
 * before the Mount call returns, and reads them again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Agent, Session, ToolSource } from "@condukt/core"
import { McpServer } from "@condukt/mcp"
import { Condukt } from "@condukt/node"
import { Mount, VirtualSandbox } from "@condukt/sandbox-virtual"
import { TestModel } from "@condukt/testing"

const fixture = path.resolve(import.meta.dirname, "../packages/mcp/test/fixtures/roots.ts")

describe("MCP roots", () => {
  it.live("a runtime mount tells the session's MCP servers their roots changed; a server that keeps them reads them again", () =>
    Effect.gen(function*() {
      const parent = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "condukt-mcp-roots-")))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(parent, { recursive: true, force: true })))
      const [first, second] = ["first", "second"].map((name) => path.join(parent, name))
      fs.mkdirSync(first!)
      fs.mkdirSync(second!)
      const server = McpServer.stdio({ name: "fx", command: process.execPath, args: [fixture] })
      const agent = Agent.make({ name: "mounting", model: "test:x", tools: [Mount.Mount()], mcpServers: [server] })
      const result = yield* Effect.flatMap(
        Session.start(agent, {
          sandbox: VirtualSandbox.layer({ mounts: [{ hostPath: first!, path: "/mnt/first", mode: "read-only" }], mountRoots: [parent] })
        }),
        (session) => session.run("go")
      ).pipe(Effect.provide(TestModel.layer([
        TestModel.toolCall("fx.roots", {}),
        TestModel.toolCall("Mount", { host_path: second!, vfs_path: "/mnt/second" }),
        TestModel.toolCall("fx.roots", {}),
        TestModel.text("done")
      ])))
      assert.deepStrictEqual(result.messages.flatMap((m) => (m._tag === "ToolResultMessage" ? [m.content] : [])), [
        ToolSource.fileUri(first!),
        `Mounted ${second} at /mnt/second`,
        [ToolSource.fileUri(first!), ToolSource.fileUri(second!)].join("\n")
      ])
    }).pipe(Effect.provide(Condukt.layer), Effect.scoped))
})
