/**
 * Core runs off Node (issue 21, ADR 0047): test/fixtures/off-node.ts — an agent in a VirtualSandbox
 * on TestModel calling Write, Read and Bash, on @condukt/core, @condukt/sandbox-virtual and
 * @condukt/testing alone — runs under Bun (the `bun` package, a devDependency) as under Node, from
 * the workspace's TypeScript sources, and prints the same.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { exec, root } from "./support/exec.ts"

const program = "test/fixtures/off-node.ts"

const transcript = [
  `Write: "Wrote notes/todo.txt (2 lines, 30 bytes)"`,
  `Read: "water the plants\\nfeed the cat\\n"`,
  `Bash: "2\\nWATER THE PLANTS\\nFEED THE CAT\\n"`,
  "reply: Two things to do.",
  ""
].join("\n")

describe("core off Node", () => {
  it("the program imports core, sandbox-virtual, testing and effect, nothing else", () => {
    const source = fs.readFileSync(path.join(root, program), "utf8")
    const modules = [...source.matchAll(/^import .* from "([^"]+)"$/gm)].map(([, module]) => module)
    assert.deepStrictEqual(modules, ["@condukt/core", "@condukt/sandbox-virtual", "@condukt/testing", "effect"])
  })

  it.live("the program runs under Node", () =>
    Effect.gen(function*() {
      const { exitCode, output } = yield* exec(path.join(root, "node_modules/.bin/node"), [program])
      assert.deepStrictEqual({ exitCode, output }, { exitCode: 0, output: `node\n${transcript}` })
    }))

  it.live("the same program runs under Bun", () =>
    Effect.gen(function*() {
      const { exitCode, output } = yield* exec(path.join(root, "node_modules/.bin/bun"), [program])
      assert.deepStrictEqual({ exitCode, output }, { exitCode: 0, output: `bun\n${transcript}` })
    }))
})
