/** Reading a workflow file (only a regular file, at most 1 MiB) and checking it as a run would. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as child from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Workflow } from "../src/index.ts"

const CMD = `  cmd "a" {\n    argv = ["true"]\n  }`
const wf = (body: string) => `workflow "w" {\n${body}\n}\n`

const inDir = (files: Record<string, string>) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wf-file-"))
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text)
  return dir
}

const checked = (file: string) =>
  Effect.match(Workflow.check(file), { onSuccess: () => ["ok"] as const, onFailure: (error) => [error.reason, error.message] as const })

describe("Workflow", () => {
  it.live("a named pipe is refused without opening it (nothing ever writes to it)", () =>
    Effect.gen(function*() {
      const dir = inDir({})
      const fifo = path.join(dir, "pipe.hcl")
      child.execFileSync("mkfifo", [fifo])
      assert.deepStrictEqual(yield* checked(fifo), [
        "NotRegularFile",
        `${fifo}: it is a named pipe, not a regular file; a workflow must be a regular .hcl file`
      ])
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("a link to /dev/zero is followed and refused as a character device", () =>
    Effect.gen(function*() {
      const dir = inDir({})
      const zero = path.join(dir, "zero.hcl")
      fs.symlinkSync("/dev/zero", zero)
      assert.deepStrictEqual(yield* checked(zero), [
        "NotRegularFile",
        `${zero}: it is a character device, not a regular file; a workflow must be a regular .hcl file`
      ])
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("a file over 1 MiB is refused; a link to a good file is read", () =>
    Effect.gen(function*() {
      const dir = inDir({ "big.hcl": wf(CMD) + `# ${"x".repeat(Workflow.MAX_FILE_BYTES)}\n`, "good.hcl": wf(CMD) })
      fs.symlinkSync(path.join(dir, "good.hcl"), path.join(dir, "link.hcl"))
      assert.deepStrictEqual(yield* checked(path.join(dir, "big.hcl")), [
        "FileTooLarge",
        `${path.join(dir, "big.hcl")}: the file is larger than 1048576 bytes (1 MiB), the most a workflow file may have`
      ])
      assert.deepStrictEqual(yield* checked(path.join(dir, "link.hcl")), ["ok"])
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("5,000 nested parentheses are refused at file:line:col before HCL's parser sees them", () =>
    Effect.gen(function*() {
      const deep = `${"(".repeat(5000)}input.x${")".repeat(5000)}`
      const dir = inDir({
        "bare.hcl": wf(`  input "x" {\n    type = "string"\n  }\n  cmd "a" {\n    argv = ["echo", ${deep}]\n  }`),
        "template.hcl": wf(`  input "x" {\n    type = "string"\n  }\n  cmd "a" {\n    argv = ["echo", "\${${deep}}"]\n  }`)
      })
      assert.deepStrictEqual(yield* checked(path.join(dir, "bare.hcl")), [
        "NestingTooDeep",
        `${path.join(dir, "bare.hcl")}:6:274: brackets, braces and \${...} nest more than 256 levels deep here; flatten the expression`
      ])
      assert.deepStrictEqual(yield* checked(path.join(dir, "template.hcl")), [
        "NestingTooDeep",
        `${path.join(dir, "template.hcl")}:6:276: brackets, braces and \${...} nest more than 256 levels deep here; flatten the expression`
      ])
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("the text of strings, heredocs and comments does not count as nesting; their ${…} does", () =>
    Effect.gen(function*() {
      const text = "((((".repeat(100)
      const deep = `${"(".repeat(300)}input.x${")".repeat(300)}`
      const heredoc = (inner: string) =>
        wf(`  input "x" {\n    type = "string"\n  }\n  # ${text}\n  cmd "a" {\n    argv = ["echo", "${text}", <<-EOT\n      say "${text} \${${inner}}\n      EOT\n    ]\n  }`)
      const dir = inDir({ "text.hcl": heredoc("input.x"), "deep.hcl": heredoc(deep) })
      assert.deepStrictEqual(yield* checked(path.join(dir, "text.hcl")), ["ok"])
      assert.deepStrictEqual(yield* checked(path.join(dir, "deep.hcl")), [
        "NestingTooDeep",
        `${path.join(dir, "deep.hcl")}:8:667: brackets, braces and \${...} nest more than 256 levels deep here; flatten the expression`
      ])
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("check makes every check run makes before its first step: cycles, unknown dependencies, defaults, MCP declarations", () =>
    Effect.gen(function*() {
      const dir = inDir({
        "cycle.hcl": wf(`  cmd "a" {\n    needs = ["b"]\n    argv = ["true"]\n  }\n  cmd "b" {\n    needs = ["a"]\n    argv = ["true"]\n  }`),
        "unknown.hcl": wf(`  cmd "a" {\n    needs = ["nope"]\n    argv = ["true"]\n  }`),
        "default.hcl": wf(`  input "n" {\n    type = "integer"\n    default = "three"\n  }\n${CMD}`),
        "auth.hcl": wf(`  mcp_server "api" {\n    transport = "http"\n    url = "http://127.0.0.1:1/mcp"\n    auth = { type = "basic" }\n  }\n${CMD}`)
      })
      const at = (file: string) => path.join(dir, file)
      assert.deepStrictEqual(yield* checked(at("cycle.hcl")), [
        "Cycle",
        `${at("cycle.hcl")}: workflow.steps: steps a, b depend on each other in a cycle; remove one of the dependencies`
      ])
      assert.deepStrictEqual(yield* checked(at("unknown.hcl")), [
        "UnknownDependency",
        `${at("unknown.hcl")}: workflow.steps.a: depends on nope, which is not a step of this workflow; fix the name or add the step`
      ])
      assert.deepStrictEqual(yield* checked(at("default.hcl")), [
        "InvalidDefault",
        `${at("default.hcl")}: workflow.inputs: input defaults do not match their declarations: n: got \"three\", expected number`
      ])
      assert.deepStrictEqual(yield* checked(at("auth.hcl")), [
        "InvalidMcpServer",
        `${at("auth.hcl")}: workflow.mcp_servers.api: auth type must be "bearer" or "client_credentials", got "basic"`
      ])
      fs.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(NodeServices.layer)))
})
