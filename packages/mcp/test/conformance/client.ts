/**
 * The client the official conformance suite runs: `node client.ts <server-url>`, the scenario in
 * MCP_CONFORMANCE_SCENARIO (and, for some, data in MCP_CONFORMANCE_CONTEXT). It starts our client
 * actor (a Streamable HTTP `McpServer`, with the headless OAuth provider) in a scope, calls the
 * tools the scenario names in its context (`toolCalls`, with their arguments) or else each tool
 * the server lists once (arguments from the tool's schema; `json-schema-2020-12-preservation`:
 * the focal tool's schema echoed back), then closes the scope.
 */
import { NodeRuntime } from "@effect/platform-node"
import { CrossAppAccessProvider, requestJwtAuthorizationGrant } from "@modelcontextprotocol/client"
import { Effect } from "effect"
import { NodeProcessRunner } from "@condukt/node"
import { McpAuth, McpServer } from "../../src/index.ts"

const url = process.argv[2]!
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ""
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}") as Record<string, string | undefined> & {
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly arguments: Record<string, unknown> }>
}

const provider = McpAuth.headless({
  clientId: context.client_id,
  clientSecret: context.client_secret,
  privateKey: context.private_key_pem,
  signingAlgorithm: context.signing_algorithm,
  // Workload identity (SEP-1933): the platform's JWT, exchanged with the JWT-bearer grant.
  assertion: context.valid_jwt,
  // Sender-constrained tokens (SEP-1932), for the scenarios that ask for them.
  dpop: scenario.startsWith("auth/dpop"),
  // The suite's client ID metadata document (SEP-991), which its authorization server fetches.
  ...(scenario === "auth/basic-cimd" ? { clientMetadataUrl: "https://conformance-test.local/client-metadata.json" } : {}),
  ...(scenario.includes("client-credentials") || scenario.includes("wif") ? {} : { redirectUrl: "http://localhost:3000/callback" })
})

const argumentsFor = (schema: { readonly properties?: Record<string, { readonly type?: string }> | undefined }) =>
  Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, property]) => [key, property.type === "number" ? 1 : "x"]))

/**
 * `json-schema-2020-12-preservation`: the focal tool's schema, as the model would get it (the
 * tool's `parameters`), sent back through the server's echo tool for the suite to compare.
 */
const echoSchema = (tools: ReadonlyArray<{ readonly name: string; readonly parameters: unknown }>) =>
  tools.filter((tool) => tool.name === "conformance.json_schema_2020_12_tool")
    .map((tool) => ({ name: "json_schema_echo", arguments: { schema: tool.parameters } as Record<string, unknown> }))

/**
 * Enterprise-managed authorization (cross-app access): the SDK's own provider through
 * `McpAuth.oauth`. The identity provider's ID token is exchanged there for a JWT authorization
 * grant (RFC 8693), which the MCP server's authorization server takes with the JWT-bearer grant.
 */
const crossAppAccess = () =>
  new CrossAppAccessProvider({
    clientId: context.client_id ?? "",
    clientSecret: context.client_secret ?? "",
    assertion: (ctx) =>
      requestJwtAuthorizationGrant({
        tokenEndpoint: context.idp_token_endpoint ?? "",
        audience: ctx.authorizationServerUrl,
        resource: ctx.resourceUrl,
        idToken: context.idp_id_token ?? "",
        clientId: context.idp_client_id ?? "",
        ...(ctx.scope === undefined ? {} : { scope: ctx.scope }),
        fetchFn: ctx.fetchFn
      }).then((grant) => grant.jwtAuthGrant)
  })

const server = McpServer.http({
  name: "conformance",
  url,
  auth: McpAuth.oauth(scenario === "auth/enterprise-managed-authorization" ? crossAppAccess() : provider),
  elicitation: "accept-defaults",
  initTimeout: "60 seconds"
})

const program = Effect.gen(function*() {
  const tools = yield* yield* McpServer.startAll([server])
  const calls = context.toolCalls ?? (scenario === "json-schema-2020-12-preservation"
    ? echoSchema(tools)
    : tools.map((tool) => ({ name: tool.name.slice("conformance.".length), arguments: argumentsFor(tool.parameters as never) })))
  for (const call of calls) {
    const tool = tools.find((t) => t.name === `conformance.${call.name}`)
    if (tool !== undefined) yield* Effect.ignore(tool.call(call.arguments, undefined as never))
  }
}).pipe(Effect.scoped, Effect.provide(NodeProcessRunner.layer))

NodeRuntime.runMain(program)
