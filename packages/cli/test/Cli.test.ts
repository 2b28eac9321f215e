/**
 * The `condukt` binary end to end, as a user runs it: node_modules/.bin/condukt of the workspace,
 * on the workspace's Node 22, in a temporary directory.
 */
import { Processes } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { execIn, root } from "../../../test/support/exec.ts"
import { VERSION } from "../src/Version.ts"

const condukt = path.join(root, "node_modules/.bin/condukt")
const env = { PATH: `${path.join(root, "node_modules/.bin")}:/usr/bin:/bin`, HOME: os.tmpdir() }

const GREET = `workflow "greet" {
  input "name" {
    type = "string"
  }
  input "times" {
    type = "integer"
    default = 1
  }
  cmd "hello" {
    argv = ["echo", "Hello, \${input.name} x\${input.times}"]
  }
  output = { text = task.hello.stdout, times = input.times }
}
`

const inDir = (files: Record<string, string>) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "condukt-cli-"))
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text)
  return dir
}

describe("condukt", () => {
  it.live("run prints the output, with --input as one JSON object or as key=value pairs", () =>
    Effect.gen(function*() {
      const dir = inDir({ "greet.hcl": GREET })
      const json = yield* execIn(dir, condukt, ["run", "greet.hcl", "--input", `{"name":"Ada","times":2}`], env)
      assert.deepStrictEqual(json, { stdout: `{"text":"Hello, Ada x2\\n","times":2}\n`, stderr: "", exitCode: 0 })
      const pairs = yield* execIn(dir, condukt, ["run", "greet.hcl", "--input", "name=Ada", "--input", "times=3"], env)
      assert.deepStrictEqual(pairs, { stdout: `{"text":"Hello, Ada x3\\n","times":3}\n`, stderr: "", exitCode: 0 })
      fs.rmSync(dir, { recursive: true })
    }))

  it.live("run opens a workflow's MCP servers: examples/workflows/mcp-echo.hcl against server-everything", () =>
    Effect.gen(function*() {
      // mcp-server-everything is a devDependency of @condukt/workflows; its bin dir goes on PATH.
      const bin = path.join(root, "packages/workflows/node_modules/.bin")
      const file = path.join(root, "examples/workflows/mcp-echo.hcl")
      const result = yield* execIn(os.tmpdir(), condukt, ["run", file, "--input", "message=hi"], { ...env, PATH: `${bin}:${env.PATH}` })
      assert.deepStrictEqual(result, { stdout: `{"echoed":"Echo: hi","sum":"The sum of 20 and 22 is 42."}\n`, stderr: "", exitCode: 0 })
    }))

  it.live("run --json prints one JSON event per line, the output last", () =>
    Effect.gen(function*() {
      const dir = inDir({ "greet.hcl": GREET })
      const { exitCode, stdout } = yield* execIn(dir, condukt, ["run", "greet.hcl", "--json", "--input", "name=Ada"], env)
      assert.strictEqual(exitCode, 0)
      const events = stdout.trimEnd().split("\n").map((line) => JSON.parse(line))
      assert.deepStrictEqual(events.map((event) => event._tag), ["RunStarted", "StepStarted", "StepFinished", "RunFinished", "Output"])
      assert.deepStrictEqual(events[4], { _tag: "Output", output: { text: "Hello, Ada x1\n", times: 1 } })
      fs.rmSync(dir, { recursive: true })
    }))

  it.live("check passes a good file and exits 2 on a bad one, naming where", () =>
    Effect.gen(function*() {
      const dir = inDir({
        "greet.hcl": GREET,
        "broken.hcl": "workflow \"x\" {\n  cmd \"a\" {\n    argv = \n  }\n}\n",
        "needs.hcl": "workflow \"x\" {\n  cmd \"a\" {\n    argv = [\"true\"]\n  }\n  cmd \"b\" {\n    argv = [\"echo\", task.a.stdout]\n  }\n}\n"
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["check", "greet.hcl"], env), { stdout: "ok: greet.hcl\n", stderr: "", exitCode: 0 })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["check", "broken.hcl"], env), {
        stdout: "",
        stderr: "check failed: broken.hcl:3:12: Invalid expression: Expected the start of an expression, but found an invalid expression token.\n",
        exitCode: 2
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["check", "needs.hcl"], env), {
        stdout: "",
        stderr: "check failed: needs.hcl: workflow.steps.b.needs: step b refers to task.a without listing it in needs; add needs = [\"a\"]\n",
        exitCode: 2
      })
      fs.rmSync(dir, { recursive: true })
    }))

  it.live("a failed run exits 1, bad inputs and usage errors exit 2", () =>
    Effect.gen(function*() {
      const dir = inDir({ "greet.hcl": GREET, "fail.hcl": "workflow \"f\" {\n  tool \"t\" {\n    id = \"Nope\"\n  }\n}\n" })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "fail.hcl"], env), {
        stdout: "",
        stderr: "Workflow run failed: step t: unknown tool \"Nope\"; the tools here are Bash, Edit, Glob, Grep, Read, Write\n",
        exitCode: 1
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "greet.hcl"], env), {
        stdout: "",
        stderr: "Workflow run failed: missing required input name\n",
        exitCode: 2
      })
      assert.strictEqual((yield* execIn(dir, condukt, ["frobnicate"], env)).exitCode, 2)
      fs.rmSync(dir, { recursive: true })
    }))

  it.live("version prints the package's version", () =>
    Effect.gen(function*() {
      const manifest = JSON.parse(fs.readFileSync(path.join(root, "packages/cli/package.json"), "utf8"))
      assert.strictEqual(VERSION, manifest.version)
      assert.deepStrictEqual(yield* execIn(os.tmpdir(), condukt, ["version"], env), { stdout: `${VERSION}\n`, stderr: "", exitCode: 0 })
    }))

  it.live("SIGINT during a long cmd stops the run and leaves no process behind", () =>
    Effect.gen(function*() {
      const dir = inDir({
        "long.hcl": `workflow "long" {
  cmd "wait" {
    argv = ["sh", "-c", "sleep 300 & echo $! > sleeper.pid; wait"]
  }
}
`
      })
      // Node 22 itself, not the workspace's `node` shim (a shell script in front of it), so the
      // exit code read is the CLI's; in a group of its own, signalled whole as Ctrl-C does.
      const node = path.join(root, "node_modules/node/bin/node")
      const bin = path.join(root, "packages/cli/src/bin.ts")
      const cli = child.spawn(node, [bin, "run", "long.hcl"], { cwd: dir, env, stdio: "ignore", detached: true })
      const exited = Effect.callback<number | null>((resume) => {
        cli.once("exit", (code) => resume(Effect.succeed(code)))
      })
      const sleeper = yield* Processes.awaitPidFile(path.join(dir, "sleeper.pid"))
      process.kill(-cli.pid!, "SIGINT")
      assert.strictEqual(yield* exited, 130)
      yield* Processes.awaitDeath(sleeper)
      assert.isTrue(yield* Processes.isDead(sleeper))
      fs.rmSync(dir, { recursive: true })
    }), { timeout: 30_000 })

  it.live("SIGINT during a run stops its MCP servers too", () =>
    Effect.gen(function*() {
      const node = path.join(root, "node_modules/node/bin/node")
      const everything = path.join(root, "packages/workflows/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
      const dir = inDir({
        "served.hcl": `workflow "served" {
  mcp_server "everything" {
    transport = "stdio"
    command = "sh"
    args = ["-c", "echo $$ > server.pid; exec '${node}' '${everything}' stdio"]
  }
  tool "echo" {
    id = "everything.echo"
    args = { message = "hi" }
  }
  cmd "wait" {
    needs = ["echo"]
    argv = ["sh", "-c", "sleep 300 & echo $! > sleeper.pid; wait"]
  }
}
`
      })
      const bin = path.join(root, "packages/cli/src/bin.ts")
      const cli = child.spawn(node, [bin, "run", "served.hcl"], { cwd: dir, env, stdio: "ignore", detached: true })
      const exited = Effect.callback<number | null>((resume) => {
        cli.once("exit", (code) => resume(Effect.succeed(code)))
      })
      const sleeper = yield* Processes.awaitPidFile(path.join(dir, "sleeper.pid"))
      const server = Number(fs.readFileSync(path.join(dir, "server.pid"), "utf8"))
      assert.isFalse(yield* Processes.isDead(server))
      process.kill(-cli.pid!, "SIGINT")
      assert.strictEqual(yield* exited, 130)
      yield* Processes.awaitDeath(sleeper)
      yield* Processes.awaitDeath(server)
      assert.isTrue(yield* Processes.isDead(server))
      fs.rmSync(dir, { recursive: true })
    }), { timeout: 30_000 })
})
