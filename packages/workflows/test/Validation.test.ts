/** Every kind of invalid workflow, each on a small file, with where it is in the message. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Validator, Workflow, type WorkflowError } from "../src/index.ts"

const wf = (body: string) => `workflow "w" {\n${body}\n}\n`
const CMD = `  cmd "a" {\n    argv = ["true"]\n  }`

const invalid = (source: string) =>
  Effect.map(Effect.flip(Workflow.parse(source, "w.hcl")), (error) => [error.reason, error.message] as const)

const cases: ReadonlyArray<readonly [string, string, string, string]> = [
  ["a parse error", wf(`  cmd "a" {\n    argv = \n  }`), "ParseFailed", "w.hcl:3:12: Invalid expression: Expected the start of an expression, but found an invalid expression token."],
  ["a duplicate attribute", wf(`  cmd "a" {\n    argv = ["x"]\n    argv = ["y"]\n  }`), "DuplicateAttribute", "w.hcl:4:5: Attribute redefined: The argument \"argv\" was already set at w.hcl:3,5-9. Each argument may be set only once."],
  ["no workflow", `x = 1\n`, "UnsupportedTopLevelStatement", "w.hcl: only one workflow \"name\" { ... } block may appear at the top level, found x"],
  ["an empty file", ``, "MissingWorkflow", "w.hcl: no workflow block: the file must hold one workflow \"name\" { ... }"],
  ["two workflows", wf(CMD) + `workflow "v" {\n${CMD}\n}\n`, "MultipleWorkflows", "w.hcl: workflow: the file holds more than one workflow block; keep one per file"],
  ["an unlabeled workflow", `workflow {\n${CMD}\n}\n`, "InvalidWorkflowLabels", "w.hcl: workflow: a workflow block takes exactly one label, its name: workflow \"name\" { ... }"],
  ["a step with two labels", wf(`  cmd "a" "b" {\n    argv = ["x"]\n  }`), "InvalidStepLabels", "w.hcl: workflow.steps: a cmd block takes exactly one label, its id: cmd \"id\" { ... }"],
  ["an unknown step attribute", wf(`  cmd "a" {\n    argv = ["x"]\n    bogus = true\n  }`), "UnknownAttributes", "w.hcl: workflow.steps.a: unknown attributes bogus; a cmd step takes argv, cwd, env, max_output_bytes, needs, when"],
  ["an unknown runtime attribute", wf(`  runtime {\n    color = "red"\n  }\n${CMD}`), "UnknownAttributes", "w.hcl: workflow.runtime: unknown attributes color; runtime takes model, sandbox, cwd"],
  ["an unknown input attribute", wf(`  input "x" {\n    type = "string"\n    secret = true\n  }\n${CMD}`), "UnknownAttributes", "w.hcl: workflow.inputs.x: unknown attributes secret; input x takes type, description, default, enum, items"],
  ["an unknown mcp_server attribute", wf(`  mcp_server "t" {\n    transport = "stdio"\n    command = "x"\n    bogus = true\n  }\n${CMD}`), "UnknownAttributes", "w.hcl: workflow.mcp_servers.t: unknown attributes bogus; mcp_server t takes transport, command, args, env, url, headers, auth, prefix, init_timeout, request_timeout"],
  ["a block in a step", wf(`  cmd "a" {\n    argv = ["x"]\n    retry {\n      times = 2\n    }\n  }`), "BlocksNotAllowed", "w.hcl: workflow.steps.a: a cmd step cannot hold blocks (found retry)"],
  ["a block in runtime", wf(`  runtime {\n    limits {\n    }\n  }\n${CMD}`), "BlocksNotAllowed", "w.hcl: workflow.runtime: runtime cannot hold blocks (found limits)"],
  ["a missing attribute", wf(`  http "a" {\n    url = "http://x"\n  }`), "MissingAttribute", "w.hcl: workflow.steps.a.method: a http step needs method"],
  ["a map without a step", wf(`  map "m" {\n    over = "\${inputs.x}"\n    as = "x"\n  }`), "MissingMapStep", "w.hcl: workflow.steps.m: a map needs one unlabeled step block (cmd, agent, http, tool or map) to run per item"],
  ["a map with two steps", wf(`  map "m" {\n    over = "\${inputs.x}"\n    as = "x"\n    cmd {\n      argv = ["a"]\n    }\n    cmd {\n      argv = ["b"]\n    }\n  }`), "MultipleMapSteps", "w.hcl: workflow.steps.m: a map holds exactly one step block; wrap further work in its own steps"],
  ["a map with a foreign block", wf(`  map "m" {\n    over = "\${inputs.x}"\n    as = "x"\n    shell {\n      argv = ["a"]\n    }\n  }`), "InvalidMapStep", "w.hcl: workflow.steps.m.do: shell is not a step kind; a map holds one cmd, agent, http, tool or map block"],
  ["a labeled map step", wf(`  map "m" {\n    over = "\${inputs.x}"\n    as = "x"\n    cmd "inner" {\n      argv = ["a"]\n    }\n  }`), "AnonymousStepHasLabels", "w.hcl: workflow.steps.m.do: the step inside a map takes no label: write cmd { ... }"],
  ["a duplicate step", wf(`${CMD}\n  http "a" {\n    method = "GET"\n    url = "http://x"\n  }`), "DuplicateStep", "w.hcl: workflow.steps.a: step a is declared twice; step ids must be unique"],
  ["a duplicate input", wf(`  input "x" {\n    type = "string"\n  }\n  input "x" {\n    type = "string"\n  }\n${CMD}`), "DuplicateInput", "w.hcl: workflow.inputs.x: input x is declared twice; ids must be unique"],
  ["a duplicate mcp_server", wf(`  mcp_server "fs" {\n    transport = "stdio"\n    command = "a"\n  }\n  mcp_server "fs" {\n    transport = "stdio"\n    command = "b"\n  }\n${CMD}`), "DuplicateMcpServer", "w.hcl: workflow.mcp_servers.fs: mcp_server fs is declared twice; ids must be unique"],
  ["two runtimes", wf(`  runtime {\n  }\n  runtime {\n  }\n${CMD}`), "DuplicateRuntime", "w.hcl: workflow.runtime: a workflow has at most one runtime block"],
  ["a conditional", wf(`  cmd "a" {\n    argv = ["echo", input.x ? "a" : "b"]\n  }`), "UnsupportedExpression", "w.hcl: workflow.steps.a.argv[1]: conditional expressions (a ? b : c) are not supported; gate a step with when instead"],
  ["a for expression", wf(`  cmd "a" {\n    argv = [for x in input.xs : x]\n  }`), "UnsupportedExpression", "w.hcl: workflow.steps.a.argv: for expressions are not supported; fan out with a map step"],
  ["a function call", wf(`  cmd "a" {\n    argv = ["echo", upper(input.x)]\n  }`), "UnsupportedExpression", "w.hcl: workflow.steps.a.argv[1]: function calls are not supported (upper(...))"],
  ["arithmetic", wf(`  cmd "a" {\n    argv = ["echo", input.n + 1]\n  }`), "UnsupportedExpression", "w.hcl: workflow.steps.a.argv[1]: the arithmetic operator + is not supported; expressions compare values and combine them with && || !"],
  ["a missing need", wf(`${CMD}\n  cmd "b" {\n    when = task.a.ok\n    argv = ["echo", task.a.stdout]\n  }`), "MissingNeeds", "w.hcl: workflow.steps.b.needs: step b refers to task.a without listing it in needs; add needs = [\"a\"]"],
  ["no steps", wf(`  input "x" {\n    type = "string"\n  }`), "EmptySteps", "w.hcl: workflow.steps: a workflow needs at least one step"],
  ["an empty argv", wf(`  cmd "a" {\n    argv = []\n  }`), "EmptyList", "w.hcl: workflow.steps.a.argv: argv must name a program: a non-empty list of strings"],
  ["a non-string argv item", wf(`  cmd "a" {\n    argv = ["echo", 1]\n  }`), "ExpectedString", "w.hcl: workflow.steps.a.argv[1]: expected a string, got 1"],
  ["duplicate needs", wf(`${CMD}\n  cmd "b" {\n    needs = ["a", "a"]\n    argv = ["x"]\n  }`), "DuplicateValues", "w.hcl: workflow.steps.b.needs: a appears more than once"],
  ["a bad workflow name", `workflow "1st" {\n${CMD}\n}\n`, "InvalidName", "w.hcl: workflow.name: \"1st\" is not a workflow name; start with a letter, then letters, digits, _ or -"],
  ["a bad step id", wf(`  cmd "my-step" {\n    argv = ["x"]\n  }`), "InvalidStepId", "w.hcl: workflow.steps.my-step: \"my-step\" is not a step id; use letters, digits and _ (no hyphens)"],
  ["a bad mcp_server id", wf(`  mcp_server "_fs" {\n    transport = "stdio"\n    command = "a"\n  }\n${CMD}`), "InvalidMcpServerId", "w.hcl: workflow.mcp_servers._fs: \"_fs\" cannot name an MCP server; start with a letter, then letters, digits, _ or -"],
  ["a bad sandbox", wf(`  runtime {\n    sandbox = "docker"\n  }\n${CMD}`), "InvalidValue", "w.hcl: workflow.runtime.sandbox: \"docker\" is not allowed; use one of local, virtual"],
  ["a bad transport", wf(`  mcp_server "t" {\n    transport = "wat"\n  }\n${CMD}`), "InvalidValue", "w.hcl: workflow.mcp_servers.t.transport: \"wat\" is not allowed; use one of stdio, http, http_sse, streamable_http"],
  ["a step output in an mcp_server", wf(`  mcp_server "fs" {\n    transport = "stdio"\n    command = "fs-mcp"\n    args = ["--root", task.a.stdout]\n  }\n${CMD}`), "InvalidExpression", "w.hcl: workflow.mcp_servers.fs.args: an mcp_server opens before the first step, so its args may use inputs only, not steps"],
  ["headers on a stdio server", wf(`  mcp_server "fs" {\n    transport = "stdio"\n    command = "fs-mcp"\n    headers = { authorization = "Bearer x" }\n  }\n${CMD}`), "InvalidMcpServer", "w.hcl: workflow.mcp_servers.fs.headers: mcp_server fs is a stdio server, which sends no headers (only http servers do); pass it what it needs with env"],
  ["env on an http server", wf(`  mcp_server "tracker" {\n    transport = "http"\n    url = "http://x/mcp"\n    env = ["TRACKER_TOKEN"]\n  }\n${CMD}`), "InvalidMcpServer", "w.hcl: workflow.mcp_servers.tracker.env: mcp_server tracker is an http server, which starts no process to pass env to; send it what it needs with headers or auth"],
  ["a misspelt step in an expression", wf(`  cmd "deploy" {\n    argv = ["true"]\n  }\n  cmd "b" {\n    argv = ["echo", task.deploi.stdout]\n  }`), "UnknownDependency", "w.hcl: workflow.steps.b: refers to task.deploi, which is not a step of this workflow; did you mean \"deploy\"?"],
  ["an undeclared input in an mcp_server", wf(`  input "token" {\n    type = "string"\n  }\n  mcp_server "tracker" {\n    transport = "http"\n    url = "http://x/mcp"\n    auth = { type = "bearer", static = input.tokn }\n  }\n${CMD}`), "InvalidExpression", "w.hcl: workflow.mcp_servers.tracker.auth: reads inputs.tokn, which is not an input of this workflow; did you mean \"token\"?"],
  ["a stdio server without command", wf(`  mcp_server "fs" {\n    transport = "stdio"\n  }\n${CMD}`), "MissingKey", "w.hcl: workflow.mcp_servers.fs.command: a stdio mcp_server needs command"],
  ["a bad model", wf(`  runtime {\n    model = 3\n  }\n${CMD}`), "ExpectedModel", "w.hcl: workflow.runtime.model: model must be a string such as \"anthropic:claude-sonnet-4-6\" or an object"],
  ["a bad expect_status", wf(`  http "a" {\n    method = "get"\n    url = "http://x"\n    expect_status = "200"\n  }`), "ExpectedType", "w.hcl: workflow.steps.a.expect_status: expected an integer or a list of integers"],
  ["a bad concurrency", wf(`  input "xs" {\n    type = "array"\n  }\n  map "m" {\n    over = input.xs\n    as = "x"\n    concurrency = 0\n    cmd {\n      argv = ["echo", x]\n    }\n  }`), "InvalidValue", "w.hcl: workflow.steps.m.concurrency: 0 is not allowed; use a positive integer"],
  ["a broken placeholder", wf(`  cmd "a" {\n    argv = ["echo", "\${inputs.x"]\n  }`), "ParseFailed", "w.hcl:3:34: Invalid multi-line string: Quoted strings may not be split over multiple lines. To produce a multi-line string, either use the \\n escape to represent a newline character or use the \"heredoc\" multi-line template syntax."]
]

describe("Validation", () => {
  for (const [name, source, reason, message] of cases) {
    it.effect(`${name}: ${reason}`, () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* invalid(source), [reason as typeof reason & WorkflowError.InvalidReason, message])
      }))
  }

  it.effect("a document string outside the expression language: InvalidExpression", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Validator.validate({ name: "w", steps: { a: { kind: "cmd", argv: ["echo", "\${inputs.x:yaml}"] } } }, "w.json")
      )
      assert.deepStrictEqual(
        [error.reason, error.message],
        ["InvalidExpression", `w.json: workflow.steps.a.argv[1]: unknown formatter (use :json or :csv): yaml in "\${inputs.x:yaml}"`]
      )
    }))

  it.effect("a valid file compiles to Condukt's canonical document", () =>
    Effect.gen(function*() {
      const document = yield* Workflow.parse(
        wf(`  input "times" {\n    type = "integer"\n    default = 1\n  }\n  cmd "hello" {\n    argv = ["echo", "x\${input.times}"]\n  }\n  http "v" {\n    method = "get"\n    url = "http://x"\n    expect_status = [200, 204]\n  }\n  output = { text = task.hello.stdout, ok = task.hello.ok }`),
        "w.hcl"
      )
      assert.deepStrictEqual(document, {
        name: "w",
        inputs: { times: { type: "integer", default: 1 } },
        steps: {
          hello: { kind: "cmd", argv: ["echo", "x${inputs.times}"] },
          v: { kind: "http", method: "GET", url: "http://x", expect_status: [200, 204] }
        },
        output: { text: "${steps.hello.stdout}", ok: "${steps.hello.ok}" }
      })
    }))
})
