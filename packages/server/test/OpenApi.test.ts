/**
 * The server's OpenAPI document, checked from outside: fetched from a real server on loopback
 * (without credentials: the document is public, like the API's shape it describes — it names no
 * session and no principal), validated by `@readme/openapi-parser`, and held to the routes: for
 * every operation it lists, a request generated from it alone (path parameters filled, a required
 * body built from its schema, the bearer token when the operation asks for one) gets a status the
 * document lists for that operation, and a body that its schema for that status accepts; a body
 * that is not JSON gets the documented 400. And the other way: every endpoint of the `Api` is in
 * the document.
 */
import { TestModel } from "@condukt/testing"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpApi } from "effect/http-api"
import * as Agent from "@condukt/core/Agent"
import * as Sandbox from "@condukt/core/Sandbox"
import * as SessionStore from "@condukt/core/SessionStore"
import { dereference, validate } from "@readme/openapi-parser"
import { Api, Auth, Server } from "../src/index.ts"

const agent = Agent.make({ name: "ops", model: "test:x", tools: [] })

const serve = Server.listen(Server.layer({ agents: { ops: agent }, auth: Auth.bearer({ tok: "ada" }), defaultAgent: "ops" })).pipe(
  Effect.provide(Layer.mergeAll(TestModel.layer(Array.from({ length: 20 }, () => TestModel.text("Done."))), Sandbox.layerNoop(), SessionStore.layerMemory))
)

/** A JSON Schema, as the document holds it once dereferenced. */
type JsonSchema = { readonly [keyword: string]: any }

/** The smallest value `schema` accepts: required properties only, the first of a choice, the minimum. */
const example = (schema: JsonSchema): unknown => {
  if ("const" in schema) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum[0]
  for (const choice of ["anyOf", "oneOf"]) if (Array.isArray(schema[choice])) return example(schema[choice][0])
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case "object":
      return Object.fromEntries((schema.required ?? []).map((key: string) => [key, example(schema.properties?.[key] ?? {})]))
    case "array":
      return Array.from({ length: schema.minItems ?? 0 }, () => example(schema.items ?? {}))
    case "string":
      return "x".repeat(Math.max(1, schema.minLength ?? 1))
    case "integer":
    case "number":
      return schema.minimum ?? 1
    case "boolean":
      return true
    default:
      return null
  }
}

const typeOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : Number.isInteger(value) ? "integer" : typeof value

/**
 * Where `value` breaks `schema` (the keywords the document uses: types, properties, required,
 * additional properties, items, choices, enums, bounds), as JSON pointers with the reason; none when it fits.
 */
const violations = (schema: JsonSchema, value: unknown, at = ""): Array<string> => {
  const found: Array<string> = []
  if (schema.not !== undefined && violations(schema.not, value, at).length === 0) found.push(`${at}: matches "not"`)
  if (schema.type !== undefined) {
    const types: Array<string> = Array.isArray(schema.type) ? schema.type : [schema.type]
    const actual = typeOf(value)
    if (!types.includes(actual) && !(actual === "integer" && types.includes("number"))) return [`${at}: a ${actual}, not ${types.join("|")}`]
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((option: unknown) => JSON.stringify(option) === JSON.stringify(value))) found.push(`${at}: not one of ${JSON.stringify(schema.enum)}`)
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) found.push(`${at}: not ${JSON.stringify(schema.const)}`)
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some((choice: JsonSchema) => violations(choice, value, at).length === 0)) found.push(`${at}: matches no anyOf`)
  if (Array.isArray(schema.oneOf) && schema.oneOf.filter((choice: JsonSchema) => violations(choice, value, at).length === 0).length !== 1) found.push(`${at}: matches not exactly one oneOf`)
  for (const part of schema.allOf ?? []) found.push(...violations(part, value, at))
  if (typeof value === "string") {
    if (value.length < (schema.minLength ?? 0) || value.length > (schema.maxLength ?? Infinity)) found.push(`${at}: length ${value.length} out of bounds`)
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) found.push(`${at}: does not match ${schema.pattern}`)
  }
  if (typeof value === "number" && (value < (schema.minimum ?? -Infinity) || value > (schema.maximum ?? Infinity))) found.push(`${at}: ${value} out of bounds`)
  if (Array.isArray(value)) {
    if (value.length < (schema.minItems ?? 0) || value.length > (schema.maxItems ?? Infinity)) found.push(`${at}: ${value.length} items out of bounds`)
    if (schema.items !== undefined) value.forEach((item, i) => found.push(...violations(schema.items, item, `${at}/${i}`)))
  }
  if (typeOf(value) === "object") {
    const record = value as Record<string, unknown>
    for (const key of schema.required ?? []) if (!(key in record)) found.push(`${at}/${key}: missing`)
    for (const [key, item] of Object.entries(record)) {
      const declared = schema.properties?.[key]
      if (declared !== undefined) found.push(...violations(declared, item, `${at}/${key}`))
      else if (schema.additionalProperties === false) found.push(`${at}/${key}: not allowed`)
      else if (typeof schema.additionalProperties === "object") found.push(...violations(schema.additionalProperties, item, `${at}/${key}`))
    }
  }
  return found
}

/** The frames of an SSE body as `{ id?, event?, data }` objects, up to `max` of them (then the connection is dropped). */
const sseFrames = async (response: Response, max: number) => {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  const frames: Array<Record<string, string>> = []
  let buffer = ""
  while (frames.length < max) {
    const { done, value } = await reader.read()
    if (done) break
    buffer += value
    let end: number
    while ((end = buffer.indexOf("\n\n")) >= 0 && frames.length < max) {
      const lines = buffer.slice(0, end).split("\n").filter((line) => line !== "" && !line.startsWith(":"))
      buffer = buffer.slice(end + 2)
      const fields = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trimStart()]))
      if ("data" in fields) frames.push(fields)
    }
  }
  await reader.cancel()
  return frames
}

type Operation = { readonly method: string; readonly path: string; readonly spec: JsonSchema }

/** Every operation of `doc`, in its order. */
const operationsOf = (doc: JsonSchema): Array<Operation> =>
  Object.entries(doc.paths as Record<string, Record<string, JsonSchema>>).flatMap(([path, item]) =>
    Object.entries(item).filter(([method]) => ["get", "post", "put", "patch", "delete"].includes(method)).map(([method, spec]) => ({ method, path, spec }))
  )

/**
 * `operation` sent as the document says (path parameters from `ids`, or a value their schema
 * accepts; the body `body` when given); the status and where the answer breaks the document (none
 * when it keeps to it).
 */
const exercise = (url: string, doc: JsonSchema, operation: Operation, ids: Record<string, string>, malformed?: string) =>
  Effect.promise(async () => {
    const { method, spec } = operation
    const parameters: Array<JsonSchema> = spec.parameters ?? []
    let path = operation.path
    const query = new URLSearchParams()
    const headers: Record<string, string> = {}
    for (const parameter of parameters) {
      if (parameter.in === "path") path = path.replace(`{${parameter.name}}`, encodeURIComponent(ids[parameter.name] ?? String(example(parameter.schema))))
      else if (parameter.required === true && parameter.in === "query") query.set(parameter.name, String(example(parameter.schema)))
      else if (parameter.required === true && parameter.in === "header") headers[parameter.name] = String(example(parameter.schema))
    }
    const security: Array<Record<string, unknown>> = spec.security ?? doc.security ?? []
    if (security.some((requirement) => "bearer" in requirement)) headers.authorization = "Bearer tok"
    const body = spec.requestBody?.required !== true ? undefined : malformed ?? JSON.stringify(example(spec.requestBody.content["application/json"].schema))
    if (body !== undefined) headers["content-type"] = "application/json"
    const response = await fetch(`${url}${path}${query.size === 0 ? "" : `?${query}`}`, { method: method.toUpperCase(), headers, ...(body === undefined ? {} : { body }) })
    const documented: JsonSchema | undefined = spec.responses[String(response.status)]
    const where = `${method.toUpperCase()} ${path} → ${response.status}`
    if (documented === undefined) {
      await response.body?.cancel()
      return { status: response.status, broken: [`${where}: a status the document does not list`] }
    }
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!
    const content: Record<string, JsonSchema> = documented.content ?? {}
    if (response.body === null || response.status === 204) return { status: response.status, broken: Object.keys(content).length === 0 ? [] : [`${where}: no body, documented ${Object.keys(content)}`] }
    if (!(type in content)) {
      await response.body.cancel()
      return { status: response.status, broken: [`${where}: ${type}, documented ${Object.keys(content)}`] }
    }
    const schema = content[type]!.schema ?? {}
    const values = type === "text/event-stream" ? await sseFrames(response, 3) : [await response.json()]
    return { status: response.status, broken: values.flatMap((value) => violations(schema, value).map((problem) => `${where}: ${problem}`)) }
  })

describe("OpenApi", () => {
  it.live("the document is valid OpenAPI, every operation in it answers as it says, and every route of the Api is in it", () =>
    Effect.gen(function*() {
      const { url } = yield* serve
      const fetched = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/openapi.json`)
        return { status: response.status, doc: await response.json() as JsonSchema }
      })
      assert.strictEqual(fetched.status, 200)
      const checked = yield* Effect.promise(() => validate(structuredClone(fetched.doc) as any))
      assert.deepStrictEqual(checked, { valid: true, warnings: [], specification: "OpenAPI" })
      const doc = (yield* Effect.promise(() => dereference(structuredClone(fetched.doc) as any, { dereference: { circular: true } }))) as JsonSchema

      // Every endpoint of the Api, and only those, in the document.
      const routes: Array<string> = []
      HttpApi.reflect(Api.Api, {
        onGroup: () => {},
        onEndpoint: ({ endpoint }) => void routes.push(`${endpoint.method.toLowerCase()} ${endpoint.path.replace(/:(\w+)/g, "{$1}")}`)
      })
      const operations = operationsOf(doc)
      assert.deepStrictEqual(operations.map((op) => `${op.method} ${op.path}`).sort(), routes.sort())

      // A session with a run behind it, so the reads have something to show.
      yield* Effect.promise(async () => {
        const headers = { authorization: "Bearer tok", "content-type": "application/json" }
        await fetch(`${url}/sessions`, { method: "POST", headers, body: JSON.stringify({ id: "s1" }) }).then((r) => r.text())
        await fetch(`${url}/sessions/s1/runs`, { method: "POST", headers, body: JSON.stringify({ prompt: "hi" }) }).then((r) => r.text())
      })
      // Each operation on that session, then on one that does not exist; the stop comes last.
      const ordered = [...operations.filter((op) => op.method !== "delete"), ...operations.filter((op) => op.method === "delete")]
      const statuses: Array<string> = []
      for (const ids of [{ id: "s1" }, { id: "nobody" }]) {
        for (const operation of ordered) {
          const { broken, status } = yield* exercise(url, doc, operation, ids)
          assert.deepStrictEqual(broken, [])
          statuses.push(`${operation.spec.operationId} ${ids.id} ${status}`)
        }
      }
      // The answers of the routes this test knows, whole: real work on the session, 404 on a missing one.
      const known = Object.fromEntries(statuses.map((line) => [line.slice(0, line.lastIndexOf(" ")), Number(line.slice(line.lastIndexOf(" ") + 1))]))
      const expected: Record<string, number> = {
        ...{ "health.health": 200, "sessions.start": 201, "sessions.list": 200, "sessions.get": 200, "sessions.run": 200, "sessions.stream": 200 },
        ...{ "sessions.abort": 204, "sessions.events": 200, "sessions.history": 200, "sessions.pending": 200, "sessions.answer": 409 },
        ...{ "sessions.respond": 409, "sessions.usage": 200, "approvals.list": 200, "approvals.answer": 404, "chat.send": 400, "chat.resume": 204, "sessions.stop": 204 }
      }
      const missing = Object.fromEntries(Object.entries(expected).map(([operation, status]) =>
        [operation, ["health.health", "sessions.start", "sessions.list", "approvals.list", "chat.send"].includes(operation) ? status : 404]
      ))
      assert.deepStrictEqual(
        Object.fromEntries(Object.keys(known).filter((key) => key.split(" ")[0]! in expected).map((key) => [key, known[key]])),
        Object.fromEntries([
          ...Object.entries(expected).map(([operation, status]) => [`${operation} s1`, status]),
          ...Object.entries(missing).map(([operation, status]) => [`${operation} nobody`, status])
        ])
      )
      // A body that is not JSON, to every operation taking one: a documented 400, its body as documented.
      const malformed: Array<string> = []
      for (const operation of operations.filter((op) => op.spec.requestBody?.required === true)) {
        const { broken, status } = yield* exercise(url, doc, operation, { id: "s1" }, "{not json")
        assert.deepStrictEqual(broken, [])
        malformed.push(`${operation.spec.operationId} ${status}`)
      }
      assert.deepStrictEqual(malformed, operations.filter((op) => op.spec.requestBody?.required === true).map((op) => `${op.spec.operationId} 400`))
      // The check has teeth: an error body without its message breaks the documented 404.
      const notFound = doc.paths["/sessions/{id}"].get.responses["404"].content["application/json"].schema
      assert.deepStrictEqual(violations(notFound, { _tag: "NotFound" }), ["/message: missing"])
    }))
})
