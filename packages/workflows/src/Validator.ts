/**
 * Validator — Condukt's rules for a canonical document, whatever produced it (the HCL compiler or
 * a caller's JSON): allowed keys, required keys, ids and names, value types, unique `needs` and
 * tool lists, allowed values (`sandbox`, `transport`, `method`), and every `${…}` string parsed
 * (an `mcp_server`'s may use only `inputs`: servers open before the first step), and what a server's
 * transport cannot use refused (`headers` on a stdio server, `env` on an http one).
 * Each error names the block path (`workflow.steps.deploy.argv`). It does not look at the graph:
 * an unknown dependency or a cycle is the run engine's error, found before the first step runs.
 */
import { Approval } from "@condukt/core"
import { Effect, Result, Schema } from "effect"
import {
  Document,
  HTTP_METHODS,
  INPUT_TYPES,
  MCP_TEMPLATED,
  NAME,
  SANDBOXES,
  STEP_ID,
  STEP_KINDS,
  TRANSPORTS
} from "./Document.ts"
import * as ApprovalRules from "./internal/approvalRules.ts"
import { didYouMean } from "./internal/nearest.ts"
import * as Template from "./Template.ts"
import { type InvalidReason, WorkflowInvalid } from "./WorkflowError.ts"

type Raw = Readonly<Record<string, unknown>>

const TOP_KEYS = ["name", "inputs", "runtime", "mcp_servers", "approval", "steps", "output"]
const COMMON = ["kind", "needs", "when"]
const STEP_KEYS: Readonly<Record<string, ReadonlyArray<string>>> = {
  cmd: ["argv", "cwd", "env", "max_output_bytes"],
  agent: ["input", "model", "tools", "system", "output_schema", "approvals"],
  http: ["method", "url", "headers", "body", "expect_status", "timeout", "max_body_bytes"],
  tool: ["id", "args"],
  map: ["over", "as", "concurrency", "do"]
}
const STEP_REQUIRED: Readonly<Record<string, ReadonlyArray<string>>> = {
  cmd: ["argv"],
  agent: ["input"],
  http: ["method", "url"],
  tool: ["id"],
  map: ["over", "as", "do"]
}
const APPROVAL_KEYS = ["allow", "ask", "deny", "timeout", "expires"]
const INPUT_KEYS = ["type", "description", "default", "enum", "items"]
const RUNTIME_KEYS = ["model", "sandbox", "cwd"]
const MCP_KEYS = ["transport", "command", "args", "env", "url", "headers", "auth", "prefix", "init_timeout", "request_timeout"]

const isObject = (value: unknown): value is Raw => typeof value === "object" && value !== null && !Array.isArray(value)
const isStringMap = (value: unknown) => isObject(value) && Object.values(value).every((v) => typeof v === "string")
const isInt = (value: unknown) => typeof value === "number" && Number.isInteger(value)

/**
 * Checks a document and returns it typed.
 *
 * @since 0.1.0
 * @category constructors
 */
export const validate = Effect.fn("Validator.validate")(function*(raw: unknown, file: string) {
  const invalid = (reason: InvalidReason, path: string, description: string) =>
    Effect.fail(new WorkflowInvalid({ reason, location: file === "" ? path : `${file}: ${path}`, description }))

  const keys = (value: Raw, path: string, allowed: ReadonlyArray<string>, what: string) => {
    const unknown = Object.keys(value).filter((key) => !allowed.includes(key)).sort()
    return unknown.length === 0
      ? Effect.void
      : invalid("UnknownKeys", path, `unknown keys ${unknown.join(", ")}; ${what} takes ${allowed.join(", ")}`)
  }
  const object = (value: unknown, path: string, what: string) =>
    isObject(value) ? Effect.succeed(value) : invalid("ExpectedType", path, `${what} must be an object`)
  const stringList = Effect.fnUntraced(function*(value: unknown, path: string, unique: boolean) {
    if (!Array.isArray(value)) return yield* invalid("ExpectedType", path, "expected a list of strings")
    for (const [i, item] of value.entries()) {
      if (typeof item !== "string") return yield* invalid("ExpectedString", `${path}[${i}]`, `expected a string, got ${JSON.stringify(item)}`)
    }
    const seen = value.filter((item, i) => value.indexOf(item) !== i)
    if (unique && seen.length > 0) return yield* invalid("DuplicateValues", path, `${[...new Set(seen)].join(", ")} appears more than once`)
  })
  const positive = (value: unknown, path: string, integer: boolean, unit: string) =>
    typeof value === "number" && value > 0 && (!integer || Number.isInteger(value))
      ? Effect.void
      : invalid("InvalidValue", path, `${JSON.stringify(value)} is not allowed; use a positive ${integer ? "integer" : "number"} (${unit})`)
  const ofType = (ok: boolean, path: string, expected: string) => (ok ? Effect.void : invalid("ExpectedType", path, `expected ${expected}`))
  const oneOf = (value: unknown, path: string, allowed: ReadonlyArray<string>) =>
    typeof value === "string" && allowed.includes(value)
      ? Effect.void
      : invalid("InvalidValue", path, `${JSON.stringify(value)} is not allowed; use one of ${allowed.join(", ")}`)
  const expressions = (value: unknown, path: string): Effect.Effect<void, WorkflowInvalid> => {
    if (typeof value === "string") {
      if (!Template.hasPlaceholder(value)) return Effect.void
      const parsed = Template.parse(value)
      return Result.isSuccess(parsed) ? Effect.void : invalid("InvalidExpression", path, parsed.failure.message)
    }
    if (Array.isArray(value)) return Effect.forEach(value, (item, i) => expressions(item, `${path}[${i}]`), { discard: true })
    if (isObject(value)) return Effect.forEach(Object.entries(value), ([key, item]) => expressions(item, `${path}.${key}`), { discard: true })
    return Effect.void
  }

  /**
   * Approval rules (an agent step's `approvals`, the workflow's `approval`): three lists of
   * tool-name globs (each compiled, as the session will), a timeout and an expiry (durations).
   */
  const approvals = Effect.fnUntraced(function*(value: unknown, path: string, what: string) {
    const rules = yield* object(value, path, what)
    yield* keys(rules, path, APPROVAL_KEYS, what)
    for (const list of ["allow", "ask", "deny"] as const) {
      if (!(list in rules)) continue
      yield* stringList(rules[list], `${path}.${list}`, true)
      const compiled = Approval.policy({ [list]: rules[list] as ReadonlyArray<string> })
      if (Result.isFailure(compiled)) return yield* invalid("InvalidValue", `${path}.${list}`, compiled.failure.message)
    }
    for (const key of ["timeout", "expires"] as const) {
      if (key in rules && ApprovalRules.millis(rules[key]) === undefined) {
        return yield* invalid("InvalidValue", `${path}.${key}`, `${JSON.stringify(rules[key])} is not allowed; use ${ApprovalRules.DURATION_FORMS}`)
      }
    }
  })

  const step = (value: unknown, path: string): Effect.Effect<void, WorkflowInvalid> =>
    Effect.gen(function*() {
      const s = yield* object(value, path, "a step")
      const kind = s["kind"]
      if (typeof kind !== "string" || !(STEP_KINDS as ReadonlyArray<string>).includes(kind)) {
        return yield* invalid("UnknownStepKind", `${path}.kind`, `${JSON.stringify(kind)} is not a step kind; use one of ${STEP_KINDS.join(", ")}`)
      }
      yield* keys(s, path, [...COMMON, ...STEP_KEYS[kind]!], `a ${kind} step`)
      for (const key of STEP_REQUIRED[kind]!) {
        if (!(key in s)) return yield* invalid("MissingKey", `${path}.${key}`, `a ${kind} step needs ${key}`)
      }
      if ("needs" in s) {
        yield* stringList(s["needs"], `${path}.needs`, true)
        for (const [i, id] of (s["needs"] as ReadonlyArray<string>).entries()) {
          if (!STEP_ID.test(id)) return yield* invalid("InvalidStepId", `${path}.needs[${i}]`, `${JSON.stringify(id)} is not a step id`)
        }
      }
      if ("when" in s) yield* ofType(typeof s["when"] === "string", `${path}.when`, "an expression string")
      switch (kind) {
        case "cmd":
          if (Array.isArray(s["argv"]) && s["argv"].length === 0) return yield* invalid("EmptyList", `${path}.argv`, "argv must name a program: a non-empty list of strings")
          yield* stringList(s["argv"], `${path}.argv`, false)
          if ("cwd" in s) yield* ofType(typeof s["cwd"] === "string", `${path}.cwd`, "a string")
          if ("env" in s) yield* ofType(isStringMap(s["env"]), `${path}.env`, "a map of strings to strings")
          if ("max_output_bytes" in s) yield* positive(s["max_output_bytes"], `${path}.max_output_bytes`, true, "bytes")
          break
        case "agent":
          if ("model" in s) yield* ofType(typeof s["model"] === "string", `${path}.model`, "a string such as \"anthropic:claude-sonnet-4-6\"")
          if ("tools" in s) yield* stringList(s["tools"], `${path}.tools`, true)
          if ("system" in s) yield* ofType(typeof s["system"] === "string", `${path}.system`, "a string")
          if ("output_schema" in s) yield* ofType(isObject(s["output_schema"]), `${path}.output_schema`, "a JSON Schema object")
          if ("approvals" in s) yield* approvals(s["approvals"], `${path}.approvals`, "approvals")
          break
        case "http":
          yield* oneOf(s["method"], `${path}.method`, HTTP_METHODS)
          yield* ofType(typeof s["url"] === "string", `${path}.url`, "a string")
          if ("headers" in s) yield* ofType(isStringMap(s["headers"]), `${path}.headers`, "a map of strings to strings")
          if ("expect_status" in s) {
            const e = s["expect_status"]
            yield* ofType(isInt(e) || (Array.isArray(e) && e.every(isInt)), `${path}.expect_status`, "an integer or a list of integers")
          }
          if ("timeout" in s) yield* positive(s["timeout"], `${path}.timeout`, false, "seconds")
          if ("max_body_bytes" in s) yield* positive(s["max_body_bytes"], `${path}.max_body_bytes`, true, "bytes")
          break
        case "tool":
          yield* ofType(typeof s["id"] === "string", `${path}.id`, "a tool id string")
          if ("args" in s) yield* ofType(isObject(s["args"]), `${path}.args`, "an object")
          break
        case "map":
          yield* ofType(typeof s["over"] === "string", `${path}.over`, "an expression yielding a list")
          if (typeof s["as"] !== "string" || !STEP_ID.test(s["as"])) {
            return yield* invalid("InvalidStepId", `${path}.as`, `${JSON.stringify(s["as"])} cannot name a binding; use letters, digits and _`)
          }
          if ("concurrency" in s && !(isInt(s["concurrency"]) && (s["concurrency"] as number) >= 1)) {
            return yield* invalid("InvalidValue", `${path}.concurrency`, `${JSON.stringify(s["concurrency"])} is not allowed; use a positive integer`)
          }
          yield* step(s["do"], `${path}.do`)
          break
      }
      yield* expressions(Object.fromEntries(Object.entries(s).filter(([key]) => key !== "do")), path)
    })

  const doc = yield* object(raw, "workflow", "a workflow document")
  yield* keys(doc, "workflow", TOP_KEYS, "a workflow")
  if (!("name" in doc)) return yield* invalid("MissingKey", "workflow.name", "a workflow needs a name")
  if (typeof doc["name"] !== "string" || !NAME.test(doc["name"])) {
    return yield* invalid("InvalidName", "workflow.name", `${JSON.stringify(doc["name"])} is not a workflow name; start with a letter, then letters, digits, _ or -`)
  }
  if ("inputs" in doc) {
    for (const [id, spec] of Object.entries(yield* object(doc["inputs"], "workflow.inputs", "inputs"))) {
      const path = `workflow.inputs.${id}`
      if (!STEP_ID.test(id)) return yield* invalid("InvalidName", path, `${JSON.stringify(id)} cannot name an input; use letters, digits and _`)
      const s = yield* object(spec, path, "an input")
      yield* keys(s, path, INPUT_KEYS, "an input")
      if (!("type" in s)) return yield* invalid("MissingKey", `${path}.type`, "an input needs a type")
      yield* oneOf(s["type"], `${path}.type`, INPUT_TYPES)
      if ("enum" in s) yield* ofType(Array.isArray(s["enum"]), `${path}.enum`, "a list")
      if ("items" in s) yield* ofType(isObject(s["items"]), `${path}.items`, "an object such as { type = \"string\" }")
    }
  }
  if ("runtime" in doc) {
    const runtime = yield* object(doc["runtime"], "workflow.runtime", "runtime")
    yield* keys(runtime, "workflow.runtime", RUNTIME_KEYS, "runtime")
    if ("sandbox" in runtime) yield* oneOf(runtime["sandbox"], "workflow.runtime.sandbox", SANDBOXES)
    if ("model" in runtime && typeof runtime["model"] !== "string" && !isObject(runtime["model"])) {
      return yield* invalid("ExpectedModel", "workflow.runtime.model", "model must be a string such as \"anthropic:claude-sonnet-4-6\" or an object")
    }
    if ("cwd" in runtime) yield* ofType(typeof runtime["cwd"] === "string", "workflow.runtime.cwd", "a string")
  }
  if ("mcp_servers" in doc) {
    for (const [id, spec] of Object.entries(yield* object(doc["mcp_servers"], "workflow.mcp_servers", "mcp_servers"))) {
      const path = `workflow.mcp_servers.${id}`
      if (!NAME.test(id)) return yield* invalid("InvalidMcpServerId", path, `${JSON.stringify(id)} cannot name an MCP server; start with a letter, then letters, digits, _ or -`)
      const s = yield* object(spec, path, "an mcp_server")
      yield* keys(s, path, MCP_KEYS, "an mcp_server")
      if (!("transport" in s)) return yield* invalid("MissingKey", `${path}.transport`, "an mcp_server needs a transport")
      yield* oneOf(s["transport"], `${path}.transport`, TRANSPORTS)
      const needed = s["transport"] === "stdio" ? "command" : "url"
      if (!(needed in s)) return yield* invalid("MissingKey", `${path}.${needed}`, `a ${s["transport"]} mcp_server needs ${needed}`)
      yield* ofType(typeof s[needed] === "string", `${path}.${needed}`, "a string")
      if ("args" in s) yield* stringList(s["args"], `${path}.args`, false)
      if ("env" in s) yield* stringList(s["env"], `${path}.env`, true)
      if ("headers" in s) yield* ofType(isStringMap(s["headers"]), `${path}.headers`, "a map of strings to strings")
      // What a transport cannot use is refused, not ignored: a token put there would never be sent.
      if (s["transport"] === "stdio" && "headers" in s) {
        return yield* invalid(
          "InvalidMcpServer",
          `${path}.headers`,
          `mcp_server ${id} is a stdio server, which sends no headers (only http servers do); pass it what it needs with env`
        )
      }
      if (s["transport"] !== "stdio" && "env" in s) {
        return yield* invalid(
          "InvalidMcpServer",
          `${path}.env`,
          `mcp_server ${id} is an http server, which starts no process to pass env to; send it what it needs with headers or auth`
        )
      }
      for (const key of MCP_TEMPLATED.filter((key) => key in s)) {
        yield* expressions(s[key], `${path}.${key}`)
        const foreign = Template.roots(s[key]).filter((root) => root !== "inputs")
        if (foreign.length > 0) {
          return yield* invalid(
            "InvalidExpression",
            `${path}.${key}`,
            `an mcp_server opens before the first step, so its ${key} may use inputs only, not ${foreign.join(", ")}`
          )
        }
        // An input no block declares is refused when a run is given it: a read of one could only fail.
        const declared = isObject(doc["inputs"]) ? Object.keys(doc["inputs"]) : []
        const undeclared = Template.inputReads(s[key]).find((name) => !declared.includes(name))
        if (undeclared !== undefined) {
          const hint = didYouMean(undeclared, declared) || (declared.length === 0 ? "; it declares no inputs: add an input block" : `; it declares ${[...declared].sort().join(", ")}`)
          return yield* invalid("InvalidExpression", `${path}.${key}`, `reads inputs.${undeclared}, which is not an input of this workflow${hint}`)
        }
      }
    }
  }
  if ("approval" in doc) yield* approvals(doc["approval"], "workflow.approval", "approval")
  if (!("steps" in doc)) return yield* invalid("MissingKey", "workflow.steps", "a workflow needs steps")
  const steps = yield* object(doc["steps"], "workflow.steps", "steps")
  if (Object.keys(steps).length === 0) return yield* invalid("EmptySteps", "workflow.steps", "a workflow needs at least one step")
  for (const [id, value] of Object.entries(steps)) {
    if (!STEP_ID.test(id)) return yield* invalid("InvalidStepId", `workflow.steps.${id}`, `${JSON.stringify(id)} is not a step id; use letters, digits and _ (no hyphens)`)
    yield* step(value, `workflow.steps.${id}`)
  }
  if ("output" in doc) yield* expressions(doc["output"], "workflow.output")
  return yield* Effect.mapError(
    Schema.decodeUnknownEffect(Document)(doc),
    (error) => new WorkflowInvalid({ reason: "ExpectedType", location: file === "" ? "workflow" : `${file}: workflow`, description: error.message })
  )
})
