/**
 * clientHandlers — the handlers an MCP client installs for its server's requests to it: what a
 * connection answers when its server asks the client something (ADR 0063).
 *
 * `roots/list`: the session's roots (its sandbox's working directory) when the session gives them;
 * once a server has read them, a change (a virtual sandbox's runtime mount) sends it
 * `notifications/roots/list_changed` before the mount's tool call returns.
 * `sampling/createMessage`: the session's own model, when the declaration says `sampling: "allow"`,
 * or `"ask"` and a person approved the request through the session (default deny: the capability
 * is not declared and the SDK answers "method not found"); the request is bounded (messages, their
 * text, the tokens asked) before the model sees it or a person is asked, and the answer is
 * redacted (the server's credentials, then the session's) before the server reads it.
 * `elicitation/create`: the declaration's handler, or `accept-defaults`, or else the session's
 * (its handler, or an event and `session.respond`; the values checked against the form here, with
 * the SDK's JSON Schema validator). Each is declared in the client's capabilities only when it is
 * answered, so a server offers only what will work.
 */
import type {
  Client,
  ClientCapabilities,
  CreateMessageRequest,
  CreateMessageResult,
  ElicitResult,
  SamplingMessage
} from "@modelcontextprotocol/client"
import type { AjvJsonSchemaValidator } from "@modelcontextprotocol/client/validators/ajv"
import { Effect, Scope, Stream } from "effect"
import { Approval, type Elicitation, History, Message, Model, type ToolSource } from "@condukt/core"
import type { Credentials } from "./credentials.ts"
import type { Declaration, ElicitationAnswer } from "./declaration.ts"
import * as Sdk from "./sdk.ts"

/** What the session lends a connection for its server's requests. */
export interface Requests {
  readonly model?: Model.Service | undefined
  readonly roots?: Effect.Effect<ReadonlyArray<ToolSource.Root>> | undefined
  /** How the connection hears of a change of the roots. */
  readonly watchRoots?: ToolSource.StartContext["watchRoots"]
  /** The session's approval flow, for `sampling: "ask"`. */
  readonly approve?: ToolSource.StartContext["approve"]
  /** The session's way to put a question to its user. */
  readonly elicit?: ToolSource.StartContext["elicit"]
}

/** What an approval of a sampling request names as its tool. */
export const SAMPLING_TOOL = "sampling/createMessage"

/** The JSON-RPC error code of a request the client refused (the spec's example for a sampling request the user rejected). */
export const REFUSED = -1

/** The most messages one sampling request may hold. */
export const MAX_SAMPLING_MESSAGES = 50

/** The most text one sampling request may hold, its system prompt included (code units). */
export const MAX_SAMPLING_CHARS = 100_000

/** The most tokens a sampled answer may take unless the declaration says otherwise. */
export const MAX_SAMPLING_TOKENS = 4096

/**
 * The most of a server's sampling requests and questions the client takes on at once, per
 * connection: each may hold a model request, an event, a person's attention; a server that sends
 * more is refused, not queued.
 */
export const MAX_ASKING = 16

/** The most text an elicitation's message may hold, and its form's schema as JSON (code units). */
export const MAX_ELICITATION_CHARS = 10_000
export const MAX_ELICITATION_SCHEMA_CHARS = 100_000

/** Counts what a connection's server has the client doing for it, refusing past `MAX_ASKING`. */
const asking = () => {
  let now = 0
  return <A>(answer: () => Promise<A>): Promise<A> => {
    if (now >= MAX_ASKING) throw new WireError(REFUSED, `the client takes at most ${MAX_ASKING} of a server's sampling requests and questions at once`)
    now++
    return answer().finally(() => {
      now--
    })
  }
}

/** Refuses a question too long for a person to read, or a form too large to show. */
const boundedQuestion = (params: { readonly message: string; readonly requestedSchema: unknown }): void => {
  if (params.message.length > MAX_ELICITATION_CHARS) {
    throw refuse(`a question's message holds at most ${MAX_ELICITATION_CHARS} characters (this one ${params.message.length})`)
  }
  const schema = JSON.stringify(params.requestedSchema) ?? ""
  if (schema.length > MAX_ELICITATION_SCHEMA_CHARS) {
    throw refuse(`a question's form holds at most ${MAX_ELICITATION_SCHEMA_CHARS} characters of schema (this one ${schema.length})`)
  }
}

const allowsSampling = (declaration: Declaration, requests: Requests): requests is Requests & { readonly model: Model.Service } =>
  requests.model !== undefined && (declaration.sampling === "allow" || (declaration.sampling === "ask" && requests.approve !== undefined))

/** The capabilities the client declares in `initialize`: only what it answers. */
export const capabilities = (declaration: Declaration, requests: Requests): ClientCapabilities => ({
  ...(requests.roots === undefined ? {} : { roots: requests.watchRoots === undefined ? {} : { listChanged: true } }),
  ...(allowsSampling(declaration, requests) ? { sampling: {} } : {}),
  ...(declaration.elicitation === undefined && requests.elicit === undefined
    ? {}
    : { elicitation: { form: declaration.elicitation === "accept-defaults" ? { applyDefaults: true } : {} } })
})

/**
 * A JSON-RPC error as the server reads it: the SDK sends a thrown error's `code` and `message`
 * (its own `McpError` would send its message prefixed with `MCP error <code>: `, which the
 * server's SDK prefixes again).
 */
class WireError extends Error {
  readonly code: number
  constructor(code: number, message: string) {
    super(message)
    this.code = code
  }
}

const refuse = (message: string) => new WireError(Sdk.sdk().ProtocolErrorCode.InvalidParams, message)

/** A sampling message's text: only text content can be sampled. */
const textOf = (message: SamplingMessage): string => {
  const blocks = Array.isArray(message.content) ? message.content : [message.content]
  return blocks.map((block) => {
    if (block.type !== "text") throw refuse(`only text can be sampled: a message holds ${block.type} content`)
    return block.text
  }).join("\n")
}

const STOP_REASONS: Readonly<Record<Model.FinishReason, string>> = {
  stop: "endTurn",
  length: "maxTokens",
  "tool-calls": "toolUse",
  "content-filter": "contentFilter",
  other: "other"
}

/** The model's request a server's `sampling/createMessage` makes, within the bounds (and its messages' texts); or why not. */
const samplingRequest = (
  declaration: Declaration,
  params: CreateMessageRequest["params"]
): { readonly request: Model.Request; readonly texts: ReadonlyArray<string> } => {
  if (params.messages.length > MAX_SAMPLING_MESSAGES) {
    throw refuse(`a sampling request holds at most ${MAX_SAMPLING_MESSAGES} messages (this one ${params.messages.length})`)
  }
  const texts = params.messages.map(textOf)
  const size = texts.reduce((sum, text) => sum + text.length, params.systemPrompt?.length ?? 0)
  if (size > MAX_SAMPLING_CHARS) throw refuse(`a sampling request holds at most ${MAX_SAMPLING_CHARS} characters of text (this one ${size})`)
  const messages = params.messages.map((message, i) =>
    message.role === "user" ? Message.user(texts[i]!) : Message.assistant([Message.textPart(texts[i]!)])
  )
  const request: Model.Request = {
    system: params.systemPrompt,
    messages: History.fromIterable(messages),
    tools: [],
    options: {
      maxTokens: Math.min(params.maxTokens, declaration.maxSamplingTokens ?? MAX_SAMPLING_TOKENS),
      ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
      ...(params.stopSequences === undefined ? {} : { stopSequences: params.stopSequences })
    }
  }
  return { request, texts }
}

/** The sampled answer, redacted; a model's failure is the server's error, redacted too. */
const sample = (model: Model.Service, request: Model.Request, credentials: Credentials): Effect.Effect<CreateMessageResult, WireError> =>
  Stream.runCollect(model.stream(request)).pipe(
    Effect.map((collected) => {
      const parts = Array.from(collected)
      const finish = parts.findLast((part) => part._tag === "Finish")
      return {
        role: "assistant" as const,
        content: { type: "text" as const, text: credentials.redact(Message.text(Model.toMessage(parts))) },
        model: model.name,
        stopReason: STOP_REASONS[finish?._tag === "Finish" ? finish.reason : "other"]
      }
    }),
    Effect.mapError((error) => new WireError(Sdk.sdk().ProtocolErrorCode.InternalError, credentials.redact(`the model failed: ${error.message}`)))
  )

/**
 * A person's approval of the sampling request first, when the declaration says `ask`: what they
 * read is the request as the model would (its system prompt, its texts, the tokens it may take).
 */
const approved = (
  declaration: Declaration,
  requests: Requests,
  request: Model.Request,
  texts: ReadonlyArray<string>,
  roles: ReadonlyArray<string>
): Effect.Effect<void, WireError> => {
  if (declaration.sampling !== "ask" || requests.approve === undefined) return Effect.void
  const input = {
    server: declaration.name,
    ...(request.system === undefined ? {} : { systemPrompt: request.system }),
    messages: texts.map((text, i) => ({ role: roles[i]!, text })),
    maxTokens: request.options?.maxTokens
  }
  return Effect.flatMap(requests.approve({ tool: SAMPLING_TOOL, input }), (answer) => {
    const refused = Approval.render(answer)
    return refused === undefined ? Effect.void : Effect.fail(new WireError(REFUSED, refused))
  })
}

/** How a form's accepted values are checked: the SDK's validator (Ajv), made by the first question. */
const formChecker = () => {
  let validator: AjvJsonSchemaValidator | undefined
  return (schema: Parameters<AjvJsonSchemaValidator["getValidator"]>[0]) => (content: Elicitation.Content): string | undefined => {
    validator ??= new (Sdk.ajv().AjvJsonSchemaValidator)()
    const checked = validator.getValidator(schema)(content)
    return checked.valid ? undefined : checked.errorMessage
  }
}

/**
 * Answers `roots/list`; after the first answer (the sandbox is built by then: watching does not
 * build a sandbox nobody asked about), each change of the roots tells the server, while the
 * connection's `scope` lasts. A notification that cannot be sent (the connection is closing) is dropped.
 */
const answerRoots = (client: Client, roots: Effect.Effect<ReadonlyArray<ToolSource.Root>>, requests: Requests, scope: Scope.Scope) => {
  const watch = requests.watchRoots
  let watching = false
  const changed = Effect.ignore(Effect.tryPromise(() => client.sendRootsListChanged()))
  client.setRequestHandler("roots/list", (_, extra) => {
    const answered = Effect.map(roots, (list) => ({ roots: [...list] }))
    if (watching || watch === undefined) return Effect.runPromise(answered, { signal: extra.mcpReq.signal })
    watching = true
    return Effect.runPromise(Effect.tap(answered, () => Scope.provide(watch(changed), scope)), { signal: extra.mcpReq.signal })
  })
}

/** Registers the handlers of what `capabilities` declared; what lives with the connection lives in `scope`. */
export const install = (client: Client, declaration: Declaration, requests: Requests, credentials: Credentials, scope: Scope.Scope): void => {
  if (requests.roots !== undefined) answerRoots(client, requests.roots, requests, scope)
  const limited = asking()
  if (allowsSampling(declaration, requests)) {
    const model = requests.model
    client.setRequestHandler("sampling/createMessage", (request, extra) => {
      const { request: asked, texts } = samplingRequest(declaration, request.params)
      const roles = request.params.messages.map((message) => message.role)
      return limited(() =>
        Effect.runPromise(Effect.andThen(approved(declaration, requests, asked, texts, roles), sample(model, asked, credentials)), { signal: extra.mcpReq.signal })
      )
    })
  }
  const elicitation = declaration.elicitation
  if (elicitation === "accept-defaults") {
    client.setRequestHandler("elicitation/create", () => Promise.resolve({ action: "accept" as const, content: {} }))
  } else if (elicitation !== undefined) {
    client.setRequestHandler("elicitation/create", (request, extra) => {
      const params = request.params
      if (params.mode === "url") return Promise.resolve<ElicitResult>({ action: "decline" })
      boundedQuestion(params)
      // The answer's arrays are readonly; the SDK's result type has them mutable (it only reads them).
      const answered = Effect.map(elicitation({ server: declaration.name, message: params.message, requestedSchema: params.requestedSchema }), (answer: ElicitationAnswer) => answer as ElicitResult)
      return limited(() => Effect.runPromise(answered, { signal: extra.mcpReq.signal }))
    })
  } else if (requests.elicit !== undefined) {
    const elicit = requests.elicit
    const checker = formChecker()
    client.setRequestHandler("elicitation/create", (request, extra) => {
      const params = request.params
      if (params.mode === "url") return Promise.resolve<ElicitResult>({ action: "decline" })
      boundedQuestion(params)
      const schema = params.requestedSchema
      // The SDK's form type and its validator's schema type differ only in how their optional keys
      // read under exactOptionalPropertyTypes: the same JSON Schema.
      const asked = elicit({ server: declaration.name, message: params.message, schema, validate: checker(schema as Parameters<typeof checker>[0]) })
      const answered = Effect.map(Effect.mapError(asked, (refused) => new WireError(REFUSED, credentials.redact(refused.description))), (answer) => answer as ElicitResult)
      return limited(() => Effect.runPromise(answered, { signal: extra.mcpReq.signal }))
    })
  }
}
