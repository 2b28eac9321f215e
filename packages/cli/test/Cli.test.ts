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
import * as http from "node:http"
import { execIn, root } from "../../../test/support/exec.ts"
import { flood, serve } from "../../workflows/test/support.ts"
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

const TOKEN = "tok-echoed-4f9a2c"

/**
 * A Streamable HTTP MCP server answering with JSON: under /reject every request is a 500 whose
 * body echoes the Authorization header; under /ok its one tool, whoami, fails echoing it; /echo
 * is a plain page echoing it (for an `http` step).
 */
const echoingMcp = (request: http.IncomingMessage, response: http.ServerResponse) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    const auth = request.headers["authorization"] ?? ""
    if (request.url === "/reject") return void response.writeHead(500, { "content-type": "text/plain" }).end(`upstream refused the credentials ${auth}`)
    if (request.url === "/echo") return void response.writeHead(200, { "content-type": "text/plain" }).end(`you sent ${auth}`)
    if (request.method !== "POST") return void response.writeHead(405).end()
    const message = JSON.parse(Buffer.concat(chunks).toString())
    if (message.id === undefined) return void response.writeHead(202).end()
    const result = message.method === "initialize"
      ? { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "echo", version: "1" } }
      : message.method === "tools/list"
      ? { tools: [{ name: "whoami", inputSchema: { type: "object" } }] }
      : { content: [{ type: "text", text: `you sent ${auth}` }], isError: true }
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }))
  })
}

const tracker = (url: string) => `workflow "tracker" {
  mcp_server "tracker" {
    transport = "http"
    url = "${url}"
    auth = { type = "bearer", env = "TRACKER_TOKEN" }
  }
  tool "me" {
    id = "tracker.whoami"
  }
  output = task.me
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
      const json = yield* execIn(dir, condukt, ["run", "greet.hcl", "--quiet", "--input", `{"name":"Ada","times":2}`], env)
      assert.deepStrictEqual(json, { stdout: `{"text":"Hello, Ada x2\\n","times":2}\n`, stderr: "", exitCode: 0 })
      const pairs = yield* execIn(dir, condukt, ["run", "greet.hcl", "--quiet", "--input", "name=Ada", "--input", "times=3"], env)
      assert.deepStrictEqual(pairs, { stdout: `{"text":"Hello, Ada x3\\n","times":3}\n`, stderr: "", exitCode: 0 })
      fs.rmSync(dir, { recursive: true })
    }))

  it.live("run opens a workflow's MCP servers: examples/workflows/mcp-echo.hcl against server-everything", () =>
    Effect.gen(function*() {
      // mcp-server-everything is a devDependency of @condukt/workflows; its bin dir goes on PATH.
      const bin = path.join(root, "packages/workflows/node_modules/.bin")
      const file = path.join(root, "examples/workflows/mcp-echo.hcl")
      const result = yield* execIn(os.tmpdir(), condukt, ["run", file, "--quiet", "--input", "message=hi"], { ...env, PATH: `${bin}:${env.PATH}` })
      assert.deepStrictEqual(result, { stdout: `{"echoed":"Echo: hi","sum":"The sum of 20 and 22 is 42."}\n`, stderr: "", exitCode: 0 })
    }))

  it.live("auth on a stdio server: check and run both accept it, with the same warning", () =>
    Effect.gen(function*() {
      const bin = path.join(root, "packages/workflows/node_modules/.bin")
      // examples/workflows/mcp-echo.hcl with an auth its stdio server cannot use.
      const example = fs.readFileSync(path.join(root, "examples/workflows/mcp-echo.hcl"), "utf8")
      const withAuth = example.replace("request_timeout = 10000", `request_timeout = 10000\n    auth = { type = "bearer", env = "EVERYTHING_TOKEN" }`)
      assert.notStrictEqual(withAuth, example)
      const dir = inDir({ "stdio-auth.hcl": withAuth })
      const warning = "warning: stdio-auth.hcl: workflow.mcp_servers.everything: auth is unused on a stdio server (only http servers send it); pass a stdio server its token with env\n"
      const withServer = { ...env, PATH: `${bin}:${env.PATH}` }
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["check", "stdio-auth.hcl"], withServer), { stdout: "ok: stdio-auth.hcl\n", stderr: warning, exitCode: 0 })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "stdio-auth.hcl", "--quiet", "--input", "message=hi"], withServer), {
        stdout: `{"echoed":"Echo: hi","sum":"The sum of 20 and 22 is 42."}\n`,
        stderr: warning,
        exitCode: 0
      })
      fs.rmSync(dir, { recursive: true })
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

  it.live("an invalid workflow exits 2 under run as under check, before any step: a misspelt step or member (the nearest named), a cycle (its members only), a missing file", () =>
    Effect.gen(function*() {
      const cmd = (id: string, needs = "") => `  cmd "${id}" {\n${needs === "" ? "" : `    needs = [${needs}]\n`}    argv = ["sh", "-c", "echo ran > ran.txt"]\n  }\n`
      const dir = inDir({
        "member.hcl": `workflow "m" {\n${cmd("a")}  cmd "b" {\n    needs = ["a"]\n    argv = ["echo", task.a.stdot]\n  }\n}\n`,
        "needs.hcl": `workflow "x" {\n${cmd("deploy")}${cmd("b", `"deploi"`)}}\n`,
        "expr.hcl": `workflow "x" {\n${cmd("deploy")}  cmd "b" {\n    argv = ["echo", task.deploi.stdout]\n  }\n}\n`,
        "cycle.hcl": `workflow "x" {\n${cmd("a")}${cmd("b", `"c", "a"`)}${cmd("c", `"b"`)}${cmd("d", `"c"`)}}\n`,
        "output.hcl": `workflow "x" {\n${cmd("deploy")}  output = task.deploi.stdout\n}\n`,
        "input.hcl": `workflow "x" {\n  input "name" {\n    type = "string"\n  }\n  cmd "a" {\n    argv = ["echo", input.nmae]\n  }\n}\n`
      })
      const refusals = [
        ["member.hcl", "check failed: member.hcl: workflow.steps.b: reads steps.a.stdot, but a cmd step's output has only ok, stdout, exit_code"],
        ["needs.hcl", `check failed: needs.hcl: workflow.steps.b: depends on deploi, which is not a step of this workflow; did you mean "deploy"?`],
        ["expr.hcl", `check failed: expr.hcl: workflow.steps.b: refers to task.deploi, which is not a step of this workflow; did you mean "deploy"?`],
        ["cycle.hcl", "check failed: cycle.hcl: workflow.steps: steps b, c depend on each other in a cycle; remove one of the dependencies"],
        ["output.hcl", `check failed: output.hcl: workflow.output: output refers to task.deploi, which is not a step of this workflow; did you mean "deploy"?`],
        ["input.hcl", `check failed: input.hcl: workflow.steps.a: reads inputs.nmae, which is not an input of this workflow; did you mean "name"?`],
        ["nope.hcl", "check failed: cannot read nope.hcl: no such file"]
      ] as const
      for (const [file, line] of refusals) {
        for (const command of ["check", "run"]) {
          assert.deepStrictEqual(yield* execIn(dir, condukt, [command, file], env), { stdout: "", stderr: `${line}\n`, exitCode: 2 })
        }
      }
      // Refused before any step: no cmd ran.
      assert.isFalse(fs.existsSync(path.join(dir, "ran.txt")))
      fs.rmSync(dir, { recursive: true })
    }))

  it.live("an input that breaks its declaration is named with the value it got", () =>
    Effect.gen(function*() {
      const dir = inDir({
        "env.hcl": `workflow "e" {\n  input "env" {\n    type = "string"\n    enum = ["dev", "prod"]\n  }\n  input "n" {\n    type = "integer"\n    default = 1\n  }\n  cmd "a" {\n    argv = ["echo", input.env]\n  }\n}\n`
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "env.hcl", "--input", "env=qa", "--input", "n=1.5"], env), {
        stdout: "",
        stderr: `Workflow run failed: inputs do not match their declarations: env: got "qa", expected "dev" | "prod"; n: got 1.5, expected an integer\n`,
        exitCode: 2
      })
      fs.rmSync(dir, { recursive: true })
    }))

  it.live("a failed run exits 1, bad inputs and usage errors exit 2", () =>
    Effect.gen(function*() {
      const dir = inDir({ "greet.hcl": GREET, "fail.hcl": "workflow \"f\" {\n  tool \"t\" {\n    id = \"Nope\"\n  }\n}\n" })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "fail.hcl", "--quiet"], env), {
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

  it.live("version and --version print the package's version, alike", () =>
    Effect.gen(function*() {
      const manifest = JSON.parse(fs.readFileSync(path.join(root, "packages/cli/package.json"), "utf8"))
      assert.strictEqual(VERSION, manifest.version)
      for (const argv of [["version"], ["--version"]]) {
        assert.deepStrictEqual(yield* execIn(os.tmpdir(), condukt, argv, env), { stdout: `${VERSION}\n`, stderr: "", exitCode: 0 })
      }
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

  it.live("every line printed is redacted with the workflow's secrets: an MCP server echoing its bearer token", () =>
    Effect.gen(function*() {
      const server = yield* serve(echoingMcp)
      const base = `http://127.0.0.1:${server.port}`
      const dir = inDir({ "reject.hcl": tracker(`${base}/reject`), "ok.hcl": tracker(`${base}/ok`) })
      const withToken = { ...env, TRACKER_TOKEN: TOKEN }
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "reject.hcl", "--quiet"], withToken), {
        stdout: "",
        // Redacted at the source: the MCP client labels the token it sent by its server.
        stderr: `Workflow run failed: MCP server tracker: ${base}/reject answered HTTP 500: upstream refused the credentials Bearer [REDACTED:tracker.bearer_token]\n`,
        exitCode: 1
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "ok.hcl", "--quiet"], withToken), {
        stdout: `{"ok":false,"error":"Error: you sent Bearer [REDACTED:tracker.bearer_token]"}\n`,
        stderr: "",
        exitCode: 0
      })
      const json = yield* execIn(dir, condukt, ["run", "ok.hcl", "--json"], withToken)
      assert.strictEqual(json.exitCode, 0)
      assert.isFalse(json.stdout.includes(TOKEN) || json.stderr.includes(TOKEN))
      assert.deepStrictEqual(JSON.parse(json.stdout.trimEnd().split("\n").at(-1)!), {
        _tag: "Output",
        output: { ok: false, error: "Error: you sent Bearer [REDACTED:tracker.bearer_token]" }
      })
      // What no step redacts (an http step's answer echoing a literal header) the CLI does.
      const hook = `workflow "hook" {\n  http "call" {\n    method = "GET"\n    url = "${base}/echo"\n    headers = { authorization = "Bearer lit-hook-7c2e91" }\n  }\n  output = task.call.body\n}\n`
      fs.writeFileSync(path.join(dir, "hook.hcl"), hook)
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "hook.hcl", "--quiet"], env), {
        stdout: "you sent [REDACTED:HTTP_CALL_AUTHORIZATION]\n",
        stderr: "",
        exitCode: 0
      })
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.scoped))

  it.live("--input __proto__=… is a plain key: refused when undeclared, passed when declared", () =>
    Effect.gen(function*() {
      const dir = inDir({
        "greet.hcl": GREET,
        "proto.hcl": `workflow "proto" {\n  input "__proto__" {\n    type = "string"\n  }\n  output = input.__proto__\n  cmd "a" {\n    argv = ["true"]\n  }\n}\n`
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "greet.hcl", "--input", "name=Ada", "--input", "__proto__=x"], env), {
        stdout: "",
        stderr: "Workflow run failed: unknown input __proto__; this workflow takes name, times\n",
        exitCode: 2
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["run", "proto.hcl", "--quiet", "--input", "__proto__=x"], env), { stdout: "x\n", stderr: "", exitCode: 0 })
      fs.rmSync(dir, { recursive: true })
    }))

  it.live("check and run refuse a named pipe and a link to /dev/zero with exit 2, never blocking or reading", () =>
    Effect.gen(function*() {
      const dir = inDir({})
      child.execFileSync("mkfifo", [path.join(dir, "pipe.hcl")])
      fs.symlinkSync("/dev/zero", path.join(dir, "zero.hcl"))
      const refused = (file: string, kind: string) => ({
        stdout: "",
        stderr: `check failed: ${file}: it is ${kind}, not a regular file; a workflow must be a regular .hcl file\n`,
        exitCode: 2
      })
      const results = yield* Effect.all(
        ["check", "run"].flatMap((command) => ["pipe.hcl", "zero.hcl"].map((file) => execIn(dir, condukt, [command, file], env))),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(results, [
        refused("pipe.hcl", "a named pipe"),
        refused("zero.hcl", "a character device"),
        refused("pipe.hcl", "a named pipe"),
        refused("zero.hcl", "a character device")
      ])
      fs.rmSync(dir, { recursive: true })
    }))

  it.live("check fails a dependency cycle as run would, before any step", () =>
    Effect.gen(function*() {
      const dir = inDir({
        "cycle.hcl": `workflow "c" {\n  cmd "a" {\n    needs = ["b"]\n    argv = ["true"]\n  }\n  cmd "b" {\n    needs = ["a"]\n    argv = ["true"]\n  }\n}\n`
      })
      assert.deepStrictEqual(yield* execIn(dir, condukt, ["check", "cycle.hcl"], env), {
        stdout: "",
        stderr: "check failed: cycle.hcl: workflow.steps: steps a, b depend on each other in a cycle; remove one of the dependencies\n",
        exitCode: 2
      })
      fs.rmSync(dir, { recursive: true })
    }))

  it.live("a 500 MB http body stops at the default 10 MiB cap, under a 512 MB heap", () =>
    Effect.gen(function*() {
      const server = yield* serve(flood(500 * 1024 * 1024, false))
      const dir = inDir({
        "big.hcl": `workflow "big" {\n  http "get" {\n    method = "GET"\n    url = "${server.url}"\n  }\n  output = task.get.status\n}\n`
      })
      const node = path.join(root, "node_modules/node/bin/node")
      const bin = path.join(root, "packages/cli/src/bin.ts")
      assert.deepStrictEqual(yield* execIn(dir, node, ["--max-old-space-size=512", bin, "run", "big.hcl", "--quiet"], env), {
        stdout: "",
        stderr: `Workflow run failed: step get: GET ${server.url} answered with a body larger than 10485760 bytes (max_body_bytes); raise max_body_bytes on the step to accept it\n`,
        exitCode: 1
      })
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.scoped))
})
