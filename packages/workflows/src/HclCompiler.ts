/**
 * HclCompiler — an `.hcl` file to the canonical document (still unchecked JSON; the Validator
 * checks it). HashiCorp's own parser reads the text (`internal/hcl.ts`); this module maps its
 * blocks onto Condukt's: exactly one `workflow "name"` holding `runtime`, `approval`, `input`,
 * `mcp_server`, the step blocks and `output`; `input.`/`task.` become `inputs.`/`steps.`; every `task.<id>` a
 * step references must be in its `needs`. Refuses: unknown attributes, nested blocks where none
 * belong, duplicates, and HCL expressions outside Condukt's language (conditionals, `for`,
 * function calls, arithmetic, splats, template directives), naming the block path of each.
 */
import { Effect, Result } from "effect"
import { STEP_KINDS } from "./Document.ts"
import * as Hcl from "./internal/hcl.ts"
import { didYouMean } from "./internal/nearest.ts"
import * as Template from "./Template.ts"
import { type InvalidReason, WorkflowInvalid } from "./WorkflowError.ts"

type Body = Readonly<Record<string, unknown>>

const STEP_ATTRS: Readonly<Record<string, ReadonlyArray<string>>> = {
  cmd: ["argv", "cwd", "env", "max_output_bytes"],
  agent: ["input", "model", "tools", "system", "output_schema", "approvals"],
  http: ["method", "url", "headers", "body", "expect_status", "timeout", "max_body_bytes"],
  tool: ["id", "args"],
  map: ["over", "as", "concurrency"]
}
const REQUIRED: Readonly<Record<string, ReadonlyArray<string>>> = {
  cmd: ["argv"],
  agent: ["input"],
  http: ["method", "url"],
  tool: ["id"],
  map: ["over", "as"]
}
const RUNTIME_ATTRS = ["model", "sandbox", "cwd"]
const APPROVAL_ATTRS = ["allow", "ask", "deny", "timeout", "expires"]
const INPUT_ATTRS = ["type", "description", "default", "enum", "items"]
const MCP_ATTRS = [
  "transport", "command", "args", "env", "url", "headers", "auth", "prefix", "init_timeout", "request_timeout"
]
const ALIASES = { input: "inputs", task: "steps" }

const isObject = (value: unknown): value is Body => typeof value === "object" && value !== null && !Array.isArray(value)
/** A block's bodies: `[ {…}, … ]` (an attribute holding a list of objects reads the same; known attributes win). */
const isBlock = (value: unknown): value is ReadonlyArray<Body> => Array.isArray(value) && value.length > 0 && value.every(isObject)
/** Labeled blocks: `{ label: [ {…} ] }`. */
const isLabeled = (value: unknown): value is Readonly<Record<string, unknown>> =>
  isObject(value) && Object.keys(value).length > 0 && Object.values(value).every((v) => isBlock(v) || isObject(v))

const quoteList = (names: ReadonlyArray<string>) => names.join(", ")

/**
 * Compiles HCL source into the canonical document (unvalidated).
 *
 * @since 0.1.0
 * @category constructors
 */
export const compile = Effect.fn("HclCompiler.compile")(function*(source: string, file: string) {
  const invalid = (reason: InvalidReason, path: string, description: string) =>
    Effect.fail(new WorkflowInvalid({ reason, location: path === "" ? file : `${file}: ${path}`, description }))

  const json = yield* Effect.mapError(Hcl.toJson(file, source), (error) =>
    error._tag === "HclTooDeep"
      ? new WorkflowInvalid({
        reason: "NestingTooDeep",
        location: `${file}:${error.line}:${error.column}`,
        description: `brackets, braces and \${...} nest more than ${Hcl.MAX_NESTING} levels deep here; flatten the expression`
      })
      : parseFailure(file, error.text))

  // Top level: exactly one workflow "name" { … }.
  const others = Object.keys(json).filter((key) => key !== "workflow").sort()
  if (others.length > 0) {
    return yield* invalid("UnsupportedTopLevelStatement", "", `only one workflow "name" { ... } block may appear at the top level, found ${quoteList(others)}`)
  }
  const workflow = json["workflow"]
  if (workflow === undefined) return yield* invalid("MissingWorkflow", "", "no workflow block: the file must hold one workflow \"name\" { ... }")
  if (!isLabeled(workflow) || !Object.values(workflow).every(isBlock)) {
    return yield* invalid("InvalidWorkflowLabels", "workflow", "a workflow block takes exactly one label, its name: workflow \"name\" { ... }")
  }
  const names = Object.keys(workflow)
  if (names.length > 1 || (workflow[names[0]!] as ReadonlyArray<Body>).length > 1) {
    return yield* invalid("MultipleWorkflows", "workflow", "the file holds more than one workflow block; keep one per file")
  }
  const name = names[0]!
  const body = (workflow[name] as ReadonlyArray<Body>)[0]!

  // Strings: aliases renamed; a string outside Condukt's language is explained with HCL's own tree.
  const expression = (value: unknown, path: string): Effect.Effect<unknown, WorkflowInvalid> => {
    if (typeof value === "string") {
      if (!value.includes("${") && !value.includes("%{")) return Effect.succeed(value)
      const renamed = Template.renameRoots(value, ALIASES)
      if (Result.isSuccess(renamed) && !value.includes("%{")) return Effect.succeed(renamed.success)
      return Effect.flatMap(explainUnsupported(value), (why) =>
        why === undefined && Result.isFailure(renamed)
          ? invalid("InvalidExpression", path, renamed.failure.message)
          : invalid("UnsupportedExpression", path, why ?? "template directives %{ ... } are not supported"))
    }
    if (Array.isArray(value)) return Effect.forEach(value, (item, i) => expression(item, `${path}[${i}]`))
    if (isObject(value)) {
      return Effect.map(
        Effect.forEach(Object.entries(value), ([key, item]) => Effect.map(expression(item, `${path}.${key}`), (v) => [key, v] as const)),
        Object.fromEntries
      )
    }
    return Effect.succeed(value)
  }

  const attributes = Effect.fnUntraced(function*(
    block: Body,
    path: string,
    allowed: ReadonlyArray<string>,
    what: string,
    blocksReason: InvalidReason = "BlocksNotAllowed"
  ) {
    const nested = Object.keys(block).filter((key) => !allowed.includes(key) && (isBlock(block[key]) || isLabeled(block[key])))
    if (nested.length > 0) return yield* invalid(blocksReason, path, `${what} cannot hold blocks (found ${quoteList(nested.sort())})`)
    const unknown = Object.keys(block).filter((key) => !allowed.includes(key)).sort()
    if (unknown.length > 0) {
      return yield* invalid("UnknownAttributes", path, `unknown attributes ${quoteList(unknown)}; ${what} takes ${quoteList(allowed)}`)
    }
    const out: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(block)) out[key] = yield* expression(value, `${path}.${key}`)
    return out
  })

  const labeled = Effect.fnUntraced(function*(value: unknown, path: string, kind: string) {
    if (!isLabeled(value) || !Object.values(value).every(isBlock)) {
      return yield* invalid("InvalidStepLabels", path, `a ${kind} block takes exactly one label, its id: ${kind} "id" { ... }`)
    }
    return Object.entries(value as Readonly<Record<string, ReadonlyArray<Body>>>)
  })

  const step = (kind: string, block: Body, path: string): Effect.Effect<Record<string, unknown>, WorkflowInvalid> =>
    Effect.gen(function*() {
      const allowed = [...STEP_ATTRS[kind]!, "needs", "when"]
      let inner: Record<string, unknown> | undefined
      let own: Body = block
      if (kind === "map") {
        const kinds = Object.keys(block).filter((key) => (STEP_KINDS as ReadonlyArray<string>).includes(key))
        const labeledInner = kinds.find((key) => !isBlock(block[key]))
        if (labeledInner !== undefined) {
          return yield* invalid("AnonymousStepHasLabels", `${path}.do`, `the step inside a map takes no label: write ${labeledInner} { ... }`)
        }
        const foreign = Object.keys(block).filter((key) => !allowed.includes(key) && !kinds.includes(key) && isBlock(block[key]))
        if (foreign.length > 0) {
          return yield* invalid("InvalidMapStep", `${path}.do`, `${quoteList(foreign.sort())} is not a step kind; a map holds one cmd, agent, http, tool or map block`)
        }
        const count = kinds.reduce((n, key) => n + (block[key] as ReadonlyArray<Body>).length, 0)
        if (count === 0) return yield* invalid("MissingMapStep", path, "a map needs one unlabeled step block (cmd, agent, http, tool or map) to run per item")
        if (count > 1) return yield* invalid("MultipleMapSteps", path, "a map holds exactly one step block; wrap further work in its own steps")
        const innerKind = kinds[0]!
        inner = yield* step(innerKind, (block[innerKind] as ReadonlyArray<Body>)[0]!, `${path}.do`)
        own = Object.fromEntries(Object.entries(block).filter(([key]) => key !== innerKind))
      }
      const attrs = yield* attributes(own, path, allowed, `a ${kind} step`)
      for (const key of REQUIRED[kind]!) {
        if (!(key in attrs)) return yield* invalid("MissingAttribute", `${path}.${key}`, `a ${kind} step needs ${key}`)
      }
      if (kind === "http" && typeof attrs["method"] === "string") attrs["method"] = attrs["method"].toUpperCase()
      if (typeof attrs["when"] === "boolean") attrs["when"] = `\${${attrs["when"]}}`
      return inner === undefined ? { kind, ...attrs } : { kind, ...attrs, do: inner }
    })

  const document: Record<string, unknown> = { name }
  // Maps, not objects: an id such as __proto__ stays a plain key (fromEntries defines, never sets).
  const inputs = new Map<string, unknown>()
  const servers = new Map<string, unknown>()
  const steps = new Map<string, unknown>()
  for (const [key, value] of Object.entries(body)) {
    if (key === "output") {
      document["output"] = yield* expression(value, "workflow.output")
    } else if (key === "runtime") {
      if (!isBlock(value)) return yield* invalid("BlocksNotAllowed", "workflow.runtime", "runtime is a block: runtime { ... }")
      if (value.length > 1) return yield* invalid("DuplicateRuntime", "workflow.runtime", "a workflow has at most one runtime block")
      document["runtime"] = yield* attributes(value[0]!, "workflow.runtime", RUNTIME_ATTRS, "runtime")
    } else if (key === "approval") {
      if (!isBlock(value)) return yield* invalid("BlocksNotAllowed", "workflow.approval", "approval is a block: approval { ask = [...], timeout = ... }")
      if (value.length > 1) return yield* invalid("DuplicateApproval", "workflow.approval", "a workflow has at most one approval block")
      document["approval"] = yield* attributes(value[0]!, "workflow.approval", APPROVAL_ATTRS, "approval")
    } else if (key === "input" || key === "mcp_server") {
      const into = key === "input" ? inputs : servers
      const plural = key === "input" ? "inputs" : "mcp_servers"
      for (const [id, bodies] of yield* labeled(value, `workflow.${plural}`, key)) {
        const path = `workflow.${plural}.${id}`
        if (bodies.length > 1) {
          return yield* invalid(key === "input" ? "DuplicateInput" : "DuplicateMcpServer", path, `${key} ${id} is declared twice; ids must be unique`)
        }
        const attrs = yield* attributes(bodies[0]!, path, key === "input" ? INPUT_ATTRS : MCP_ATTRS, `${key} ${id}`)
        const required = key === "input" ? "type" : "transport"
        if (!(required in attrs)) return yield* invalid("MissingAttribute", `${path}.${required}`, `${key} ${id} needs ${required}`)
        into.set(id, attrs)
      }
    } else if ((STEP_KINDS as ReadonlyArray<string>).includes(key)) {
      for (const [id, bodies] of yield* labeled(value, `workflow.steps`, key)) {
        const path = `workflow.steps.${id}`
        if (bodies.length > 1 || steps.has(id)) return yield* invalid("DuplicateStep", path, `step ${id} is declared twice; step ids must be unique`)
        steps.set(id, yield* step(key, bodies[0]!, path))
      }
    } else {
      return yield* invalid(
        "UnknownAttributes",
        `workflow.${key}`,
        `unknown ${isBlock(value) || isLabeled(value) ? "block" : "attribute"} ${key}; a workflow holds runtime, approval, input, mcp_server, cmd, agent, http, tool, map and output`
      )
    }
  }
  if (inputs.size > 0) document["inputs"] = Object.fromEntries(inputs)
  if (servers.size > 0) document["mcp_servers"] = Object.fromEntries(servers)
  document["steps"] = Object.fromEntries(steps)

  // Explicit needs: a reader of the file sees every dependency at the step (the output is exempt).
  for (const id of [...steps.keys()].sort()) {
    const compiled = steps.get(id) as Body
    const needs = Array.isArray(compiled["needs"]) ? compiled["needs"] : []
    const references = Template.references(compiled)
    // A step that does not exist is a typo more often than a forgotten needs: named as such.
    const unknown = references.find((ref) => !steps.has(ref))
    if (unknown !== undefined) {
      return yield* invalid(
        "UnknownDependency",
        `workflow.steps.${id}`,
        `refers to task.${unknown}, which is not a step of this workflow${didYouMean(unknown, steps.keys()) || "; fix the name or add the step"}`
      )
    }
    const missing = references.filter((ref) => !needs.includes(ref))
    if (missing.length > 0) {
      return yield* invalid(
        "MissingNeeds",
        `workflow.steps.${id}.needs`,
        `step ${id} refers to ${quoteList(missing.map((m) => `task.${m}`))} without listing ${missing.length === 1 ? "it" : "them"} in needs; add needs = [${
          missing.map((m) => JSON.stringify(m)).join(", ")
        }]`
      )
    }
  }
  return document
})

/** `parse config: [f.hcl:3,3-4: Summary; Detail]` → `f.hcl:3:3` and `Summary: Detail`. */
const parseFailure = (file: string, text: string): WorkflowInvalid => {
  const match = /([^\s[\]]+):(\d+),(\d+)(?:-[\d,]+)?: ([^;\]]+)(?:; ([^\]]*))?/.exec(text)
  if (match === null) return new WorkflowInvalid({ reason: "ParseFailed", location: file, description: text.replace(/^[^:]*: /, "") })
  const [, , line, column, summary, rest] = match
  // Only the first diagnostic: the others usually follow from it.
  const description = rest?.split(/ [^\s[\]]+:\d+,\d+(?:-[\d,]+)?: /)[0]
  return new WorkflowInvalid({
    reason: summary === "Attribute redefined" ? "DuplicateAttribute" : "ParseFailed",
    location: `${file}:${line}:${column}`,
    description: description === undefined || description.trim() === "" ? summary!.trim() : `${summary!.trim()}: ${description.trim()}`
  })
}

const ARITHMETIC: Readonly<Record<string, string>> = { add: "+", subtract: "-", multiply: "*", divide: "/", modulo: "%" }

/** Why HCL's tree of `template` holds something Condukt's language lacks; undefined when it does not. */
const explainUnsupported = (template: string): Effect.Effect<string | undefined> =>
  Effect.map(Effect.option(Hcl.templateAst(template)), (ast) => {
    if (ast._tag === "None" || ast.value === null) return undefined
    if (template.includes("%{")) return "template directives %{ ... } are not supported"
    const find = (node: Hcl.SyntaxNode): string | undefined => {
      switch (node.type) {
        case "conditional":
          return "conditional expressions (a ? b : c) are not supported; gate a step with when instead"
        case "for":
          return "for expressions are not supported; fan out with a map step"
        case "function":
          return `function calls are not supported (${"name" in node.meta ? node.meta.name : "a function"}(...))`
        case "splat":
          return "splat expressions (.* and [*]) are not supported; fan out with a map step"
        case "binaryOp": {
          const op = "operator" in node.meta ? ARITHMETIC[node.meta.operator] : undefined
          if (op !== undefined) return `the arithmetic operator ${op} is not supported; expressions compare values and combine them with && || !`
        }
      }
      for (const child of node.children ?? []) {
        const found = find(child)
        if (found !== undefined) return found
      }
      return undefined
    }
    return find(ast.value)
  })
