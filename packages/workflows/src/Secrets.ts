/**
 * Secrets — the secret values a workflow document names, as `Secret`s by name, so that whoever
 * prints what a run says (the CLI) can redact them: the host variables an `mcp_server` reads
 * (`auth.env`, `auth.client_id_env`, `auth.client_secret_env`, each name of `env` but PATH, HOME and the like), the literal tokens and client
 * secrets of its `auth`, and the literal values of credential headers (`Secret.isCredentialName`)
 * of `mcp_server` blocks and `http` steps, with
 * the credential after `Bearer `/`Basic ` too. It resolves nothing and refuses nothing; a
 * 1Password `op` reference is left out (resolving it would run `op` a second time; the MCP
 * client redacts what it resolves itself).
 */
import { Secret } from "@condukt/core"
import type * as Document from "./Document.ts"

/** A name fit for `[REDACTED:NAME]`: upper case, `_` for anything else. */
const nameOf = (...parts: ReadonlyArray<string>) => parts.join("_").toUpperCase().replace(/[^A-Z0-9_]/g, "_")

const text = (record: Readonly<Record<string, unknown>>, key: string) => (typeof record[key] === "string" ? record[key] : undefined)

/** Literal credential headers (a placeholder is not a value yet), and the credential after a scheme. */
const headerSecrets = (owner: string, headers: Readonly<Record<string, string>> | undefined) =>
  Object.entries(headers ?? {}).flatMap(([header, value]) => {
    if (!Secret.isCredentialName(header) || value.includes("${")) return []
    const name = nameOf(owner, header)
    const scheme = /^(?:Bearer|Basic|Token)\s+(\S+)$/i.exec(value)
    return scheme === null ? [[name, Secret.static(value)] as const] : [[name, Secret.static(value)] as const, [`${name}_CREDENTIAL`, Secret.static(scheme[1]!)] as const]
  })

const serverSecrets = (id: string, spec: Document.McpServerSpec) => {
  // A value given by an input (`${inputs.token}`) is not known before the run.
  const auth = Object.fromEntries(Object.entries(spec.auth ?? {}).filter(([, value]) => !(typeof value === "string" && value.includes("${"))))
  const entries: Array<readonly [string, Secret.Secret]> = []
  for (const key of ["env", "client_id_env", "client_secret_env"]) {
    const variable = text(auth, key)
    if (variable !== undefined) entries.push([variable, Secret.env(variable)])
  }
  const token = text(auth, "static")
  if (token !== undefined) entries.push([nameOf("MCP", id, "TOKEN"), Secret.static(token)])
  const clientSecret = text(auth, "client_secret") ?? text(auth, "client_secret_static")
  if (clientSecret !== undefined) entries.push([nameOf("MCP", id, "CLIENT_SECRET"), Secret.static(clientSecret)])
  // As the MCP client counts them: a host variable every process has (PATH, HOME) is no secret; a
  // name given by an input (`${inputs.var}`) is not known before the run.
  for (const name of spec.env ?? []) {
    if (!Secret.isOrdinaryVariable(name) && !name.includes("${")) entries.push([name, Secret.env(name)])
  }
  entries.push(...headerSecrets(nameOf("MCP", id), spec.headers))
  return entries
}

const stepSecrets = (id: string, step: Document.Step): ReadonlyArray<readonly [string, Secret.Secret]> =>
  step.kind === "http" ? headerSecrets(nameOf("HTTP", id), step.headers) : step.kind === "map" ? stepSecrets(id, step.do) : []

/**
 * The secrets `document` names, by the name each is redacted under.
 *
 * @since 0.1.0
 * @category constructors
 */
export const of = (document: Document.Document): Secret.Secrets =>
  Object.fromEntries([
    ...Object.entries(document.mcp_servers ?? {}).flatMap(([id, spec]) => serverSecrets(id, spec)),
    ...Object.entries(document.steps).flatMap(([id, step]) => stepSecrets(id, step))
  ])
