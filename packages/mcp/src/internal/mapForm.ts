/**
 * mapForm — the map form of a server declaration, as configuration files write it (Condukt's
 * `mcp_server` keys): every declaration option, in camel case or snake case (`initTimeout` or
 * `init_timeout`, milliseconds), and `auth` in Condukt's shape (`{ type = "bearer", env | static |
 * op }`, or `client_credentials` with `token_url`, `client_id` and `client_secret`, each also as
 * `_env` or `_static`, and `scope`). It refuses, with a sentence, what a declaration cannot hold:
 * an unknown key (never dropped), a key given in both cases, a value of the wrong type, an `auth`
 * it cannot read. `auth` on a stdio server is accepted and unused (Condukt's rule: auth is for
 * HTTP servers), with a warning saying so (ADR 0051).
 */
import { Secret } from "@condukt/core"
import { Exit, Schema } from "effect"
import * as McpAuth from "../McpAuth.ts"
import type { Declaration } from "./declaration.ts"

const Millis = Schema.Finite.check(Schema.isGreaterThan(0))
const Count = Schema.Int.check(Schema.isGreaterThan(0))

/** Every key of the map form (camel case) with its type; `auth` is read apart. */
const Fields = Schema.Struct({
  name: Schema.String,
  transport: Schema.String,
  command: Schema.optionalKey(Schema.String),
  args: Schema.optionalKey(Schema.Array(Schema.String)),
  cwd: Schema.optionalKey(Schema.String),
  env: Schema.optionalKey(Schema.Union([Schema.Array(Schema.String), Schema.Record(Schema.String, Schema.String)])),
  url: Schema.optionalKey(Schema.String),
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  auth: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
  prefix: Schema.optionalKey(Schema.String),
  initTimeout: Schema.optionalKey(Millis),
  requestTimeout: Schema.optionalKey(Millis),
  listTimeout: Schema.optionalKey(Millis),
  restart: Schema.optionalKey(Schema.Literals(["temporary", "transient", "permanent"])),
  elicitation: Schema.optionalKey(Schema.Literal("accept-defaults")),
  sampling: Schema.optionalKey(Schema.Literals(["allow", "ask", "deny"])),
  approval: Schema.optionalKey(Schema.Literals(["ask", "deny"])),
  maxSamplingTokens: Schema.optionalKey(Count),
  maxMessageBytes: Schema.optionalKey(Count),
  maxResultChars: Schema.optionalKey(Count),
  maxToolPages: Schema.optionalKey(Count),
  maxTools: Schema.optionalKey(Count),
  retrySafe: Schema.optionalKey(Schema.Union([Schema.Boolean, Schema.Array(Schema.String)]))
})

const KEYS = Object.keys(Fields.fields)

/** `init_timeout` -> `initTimeout`. */
const camel = (key: string) => key.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase())

/** A declaration from the map form, or why there is none; `warnings` for what it accepts unused. */
export type Parsed =
  | { readonly _tag: "Declared"; readonly declaration: Declaration; readonly warnings: ReadonlyArray<string> }
  | { readonly _tag: "Invalid"; readonly name: string; readonly reason: string }

const AUTH_KEYS: Readonly<Record<string, ReadonlyArray<string>>> = {
  bearer: ["type", "env", "static", "op"],
  client_credentials: [
    "type",
    "token_url",
    "token_url_env",
    "token_url_static",
    "client_id",
    "client_id_env",
    "client_id_static",
    "client_secret",
    "client_secret_env",
    "client_secret_static",
    "scope"
  ]
}

const text = (auth: Readonly<Record<string, unknown>>, key: string): string | undefined =>
  typeof auth[key] === "string" ? auth[key] : undefined

/** `name` or `name_static` (a literal), or `name_env` (a host variable), as a secret input. */
const secretOf = (auth: Readonly<Record<string, unknown>>, name: string): McpAuth.SecretInput | undefined => {
  const variable = text(auth, `${name}_env`)
  return variable !== undefined ? Secret.env(variable) : text(auth, name) ?? text(auth, `${name}_static`)
}

/** Condukt's map form of `auth`, or why it is not one. */
export const authOf = (auth: Readonly<Record<string, unknown>>): McpAuth.McpAuth | string => {
  const type = auth["type"]
  const allowed = typeof type === "string" && Object.hasOwn(AUTH_KEYS, type) ? AUTH_KEYS[type]! : undefined
  if (allowed === undefined) return `auth type must be "bearer" or "client_credentials", got ${JSON.stringify(type ?? null)}`
  const unknown = Object.keys(auth).filter((key) => !allowed.includes(key)).sort()
  if (unknown.length > 0) return `unknown ${type} auth keys ${unknown.join(", ")}; it takes ${allowed.join(", ")}`
  const wrong = Object.keys(auth).filter((key) => typeof auth[key] !== "string").sort()
  if (wrong.length > 0) return `auth ${wrong.join(", ")} must be ${wrong.length === 1 ? "a string" : "strings"}`
  if (type === "bearer") {
    const env = text(auth, "env")
    const value = text(auth, "static")
    const op = text(auth, "op")
    if (env !== undefined) return McpAuth.bearer(Secret.env(env))
    if (value !== undefined) return McpAuth.bearer(value)
    if (op !== undefined) return McpAuth.bearer(Secret.onePassword(op))
    return "a bearer auth needs env, static or op"
  }
  const tokenUrl = secretOf(auth, "token_url")
  const clientId = secretOf(auth, "client_id")
  const clientSecret = secretOf(auth, "client_secret")
  if (tokenUrl === undefined || clientId === undefined || clientSecret === undefined) {
    return "a client_credentials auth needs token_url, client_id and client_secret (each also as _env or _static)"
  }
  return McpAuth.clientCredentials({ tokenUrl, clientId, clientSecret, scope: text(auth, "scope") })
}

/** The warning for `auth` on a stdio server. */
export const STDIO_AUTH_UNUSED = "auth is unused on a stdio server (only http servers send it); pass a stdio server its token with env"

/** Reads the map form. */
export const parse = (input: unknown): Parsed => {
  const record = typeof input === "object" && input !== null && !Array.isArray(input) ? (input as Readonly<Record<string, unknown>>) : undefined
  const name = record !== undefined && typeof record["name"] === "string" ? record["name"] : "(unnamed)"
  const invalid = (reason: string): Parsed => ({ _tag: "Invalid", name, reason })
  if (record === undefined) return invalid("the configuration is not a server: it must be an object")
  const fields: Record<string, unknown> = {}
  const unknown: Array<string> = []
  for (const [key, value] of Object.entries(record)) {
    const field = camel(key)
    if (!KEYS.includes(field)) unknown.push(key)
    else if (Object.hasOwn(fields, field)) return invalid(`${field} is given twice (in camel case and in snake case); keep one`)
    else fields[field] = value
  }
  if (unknown.length > 0) return invalid(`unknown keys ${unknown.sort().join(", ")}; a server takes ${KEYS.join(", ")} (or their snake_case forms)`)
  const decoded = Schema.decodeUnknownExit(Fields)(fields)
  if (Exit.isFailure(decoded)) {
    const missing = ["name", "transport"].filter((key) => !Object.hasOwn(fields, key))
    if (missing.length > 0) return invalid(`the configuration is not a server: it needs ${missing.join(" and ")}`)
    const wrong = Object.keys(fields).filter((key) => {
      // Every key of `fields` passed the KEYS check above.
      const field = Fields.fields[key as keyof typeof Fields.fields]
      return Exit.isFailure(Schema.decodeUnknownExit(Schema.Struct({ [key]: field }))({ [key]: fields[key] }))
    })
    return invalid(`${wrong.join(", ")} ${wrong.length === 1 ? "has" : "have"} the wrong type (timeouts are milliseconds, sizes positive integers)`)
  }
  const { auth, transport, ...config } = decoded.value
  if (transport === "stdio") {
    if (config.command === undefined) return invalid("a stdio server needs a command")
    const declaration: Declaration = { ...config, command: config.command, transport: "stdio" }
    return { _tag: "Declared", declaration, warnings: auth === undefined ? [] : [STDIO_AUTH_UNUSED] }
  }
  const kind = transport === "sse" || transport === "http_sse" ? "sse" : transport === "http" || transport === "streamable_http" ? "http" : undefined
  if (kind === undefined) return invalid(`unknown transport ${JSON.stringify(transport)}: use stdio, sse or http`)
  if (config.url === undefined) return invalid(`an ${kind} server needs a url`)
  const { env: _, ...http } = config
  const resolved = auth === undefined ? undefined : authOf(auth)
  if (typeof resolved === "string") return invalid(resolved)
  return { _tag: "Declared", declaration: { ...http, url: config.url, transport: kind, auth: resolved }, warnings: [] }
}
