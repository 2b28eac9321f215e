/**
 * McpServer — an MCP server as an inert declaration that a session starts, owns and stops.
 *
 * `stdio`, `sse` (legacy HTTP+SSE) and `http` (Streamable HTTP) describe a server; each is a
 * core `ToolSource`, so `Agent.make({ mcpServers })` and `Condukt.run({ mcpServers })` take them
 * and `Session.start` starts them in parallel in the session's scope. Starting one opens its first
 * connection at once (the servers of a session connect concurrently), then hands it to the
 * session's supervisor as the child's first incarnation; later incarnations (the `restart` policy:
 * `temporary` by default, `transient`, `permanent`) connect again under that supervisor: a stdio
 * server that exits with code 0 ends its child normally, so only a `permanent` one comes back; when
 * the supervisor gives up, each server it held says so and the session goes on (ADR 0101). The
 * server's tools are ordinary `Tool`s named `<prefix>.<tool>`; while it is down they answer an
 * `McpError` of reason `TransportDown`. An invalid declaration (its name, its transport) is not
 * refused here: its start fails with `McpStartFailed` naming it, before anything runs. `startAll` gives the same to callers
 * without a session (workflows): the servers' tools, owned by the current scope.
 */
import { Duration, Exit, Effect, Scope } from "effect"
import { type ProcessRunner, Redactor, Session, Supervisor, Tool, ToolName, type ToolSource } from "@condukt/core"
import type { Tool as McpTool } from "@modelcontextprotocol/client"
import * as McpClient from "./McpClient.ts"
import { McpError, TransportDown } from "./McpError.ts"
import { Credentials } from "./internal/credentials.ts"
import type {
  CommonOptions,
  Declaration,
  Elicit,
  ElicitationAnswer,
  ElicitationRequest,
  HttpOptions,
  StdioOptions
} from "./internal/declaration.ts"
import * as MapForm from "./internal/mapForm.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/** @since 0.1.0 @category models */
export type { CommonOptions, Declaration, Elicit, ElicitationAnswer, ElicitationRequest, HttpOptions, StdioOptions }

/**
 * A declared server: a `ToolSource` a session starts; a stdio server's process (and a 1Password
 * secret's `op`) runs on the program's `ProcessRunner` (`Condukt.layer` provides it).
 *
 * @since 0.1.0
 * @category models
 */
export interface McpServer extends ToolSource.ToolSource<ProcessRunner.ProcessRunner> {
  readonly declaration: Declaration
  /** Why the declaration cannot start, when it cannot. */
  readonly invalid: string | undefined
  /** What the declaration holds unused (`auth` on a stdio server), for its caller to say (`condukt check` and `run` print them). */
  readonly warnings: ReadonlyArray<string>
}

const NAME = /^[A-Za-z][A-Za-z0-9_-]*$/

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

const declare = (declaration: Declaration, invalid?: string, warnings: ReadonlyArray<string> = []): McpServer => {
  const problem = invalid ??
    (NAME.test(declaration.name) ? undefined : "the name must start with a letter and hold only letters, digits, _ and -")
  const server: McpServer = {
    _tag: "ToolSource",
    name: declaration.name,
    ...(declaration.approval === undefined ? {} : { unlisted: declaration.approval }),
    declaration,
    invalid: problem,
    warnings,
    start: (context) => start(server, context)
  }
  return server
}

/**
 * A server run as a process speaking MCP on stdin/stdout, in a process group of its own.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stdio = (options: StdioOptions): McpServer => declare({ ...options, transport: "stdio" })

/**
 * A server speaking the legacy HTTP+SSE transport (a GET event stream, POSTs to its endpoint).
 *
 * @since 0.1.0
 * @category constructors
 */
export const sse = (options: HttpOptions): McpServer => declare({ ...options, transport: "sse" })

/**
 * A server speaking Streamable HTTP.
 *
 * @since 0.1.0
 * @category constructors
 */
export const http = (options: HttpOptions): McpServer => declare({ ...options, transport: "http" })

/**
 * A server from its map form (a configuration file's entry, Condukt's `mcp_server` keys): every
 * option in camel or snake case (`initTimeout` / `init_timeout`, in milliseconds), `transport`
 * also as `streamable_http` and `http_sse`, and `auth` as `{ type: "bearer", env | static | op }`
 * or `{ type: "client_credentials", token_url, client_id, client_secret, scope }` (each of the
 * three also as `_env` or `_static`). What cannot be a server — an unknown key, a wrong type, an
 * unknown transport, a missing command or URL, an `auth` it cannot read — becomes a declaration
 * whose start fails with `McpStartFailed` naming it. `auth` on a stdio server is unused: it is
 * accepted, with a warning in `warnings`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromConfig = (input: unknown): McpServer => {
  const parsed = MapForm.parse(input)
  return parsed._tag === "Invalid"
    ? declare({ name: parsed.name, transport: "stdio", command: "" }, parsed.reason)
    : declare(parsed.declaration, undefined, parsed.warnings)
}

// ---------------------------------------------------------------------------------------------
// Running: the supervised connection and its tools
// ---------------------------------------------------------------------------------------------

/** A server's side of its session: the live connection (if any) and the tools built from it. */
interface State {
  current: McpClient.Connection | undefined
  /** Why there is no connection, for the tools' `TransportDown`. */
  reason: string
  /** The server will not come back in this session, and its tools say so (`TransportDown`'s `final`). */
  final: boolean
  /** The supervisor no longer holds the server: it ended and was not restarted, or was given up. */
  left: boolean
  tools: ReadonlyArray<Tool.Tool>
}

/** The server's child id under its session's supervisor. */
const CHILD_PREFIX = "mcp:"

/** The server a supervisor's child id names. */
const serverOf = (childId: string): string => (childId.startsWith(CHILD_PREFIX) ? childId.slice(CHILD_PREFIX.length) : childId)

/**
 * Whether a call of the server's tool may run again after its process died mid-call: the
 * declaration says so (all, none, or by name), else the server's own annotations do (a tool that
 * only reads, or whose repeated call has no further effect). ADR 0065.
 */
const retrySafe = (declared: boolean | ReadonlyArray<string> | undefined, descriptor: McpTool): boolean => {
  if (typeof declared === "boolean") return declared
  if (declared !== undefined) return declared.includes(descriptor.name)
  return descriptor.annotations?.readOnlyHint === true || descriptor.annotations?.idempotentHint === true
}

const toTools = (server: McpServer, state: State, descriptors: ReadonlyArray<McpTool>): ReadonlyArray<Tool.Tool> => {
  const declaration = server.declaration
  const prefix = declaration.prefix ?? declaration.name
  const exposed = descriptors.map((descriptor) => (prefix === "" ? descriptor.name : `${prefix}.${descriptor.name}`))
  // Whatever the server's names hold, the model gets tool names (ToolName's rule, `.` kept); the
  // call goes out under the server's own name.
  const safe = ToolName.safeNames(exposed, "tool")
  return descriptors.map((descriptor, i) => {
    const call = McpClient.caller(declaration, descriptor.name, descriptor)
    const tool = Tool.make(safe.get(exposed[i]!) ?? exposed[i]!, {
      description: descriptor.description ?? descriptor.title ?? "",
      parameters: descriptor.inputSchema,
      maxResultChars: declaration.maxResultChars ?? McpClient.MAX_RESULT_CHARS,
      retrySafe: retrySafe(declaration.retrySafe, descriptor),
      call: (args) =>
        Effect.suspend(() =>
          state.current === undefined
            ? Effect.fail(
              new McpError({
                server: declaration.name,
                reason: new TransportDown({ description: state.reason, ...(state.final ? { final: true } : {}) })
              })
            )
            : call(state.current, args)
        )
    })
    // A guarded server's tools ask (or are denied) unless a rule allows each by its exact name.
    return declaration.approval === undefined ? tool : { ...tool, discovered: { server: declaration.name, unlisted: declaration.approval } }
  })
}

const failed = (server: McpServer, credentials: Credentials) => (error: { readonly message: string }) =>
  new Session.McpStartFailed({ server: server.name, description: credentials.reason(error.message) })

const start = (server: McpServer, context: ToolSource.StartContext) => {
  // One set for the server's life: its connections (restarts) add to it; everything it says is
  // redacted with it, then with the session's redaction.
  const credentials = new Credentials(server.name, context.redact)
  return Effect.gen(function*() {
    if (server.invalid !== undefined) return yield* new Session.McpStartFailed({ server: server.name, description: server.invalid })
    const declaration = server.declaration
    const state: State = { current: undefined, reason: "it has not started", final: false, left: false, tools: [] }
    const restart = declaration.restart ?? "temporary"
    // The supervisor gave up (ADR 0101): the server is stopped for the rest of the session, and
    // says so once — from the finalizer of a connection the give-up closed, or from the watch below.
    const givenUp = (gaveUp: Supervisor.RestartIntensityExceeded) =>
      Effect.suspend(() => {
        if (state.left) return Effect.void
        const crashed = serverOf(gaveUp.childId)
        const within = `${gaveUp.maxRestarts} restarts within ${Duration.format(Duration.millis(gaveUp.periodMs))}`
        state.current = undefined
        state.left = true
        state.final = true
        state.reason = crashed === server.name ? `${state.reason}; given up after ${within}` : `stopped when ${crashed} was given up after ${within}`
        return Effect.andThen(
          Effect.logWarning(`MCP server ${server.name} will not come back in this session: ${state.reason}`),
          context.emit({
            _tag: "McpServerStopped",
            server: server.name,
            reason: { _tag: "SupervisorGaveUp", server: crashed, maxRestarts: gaveUp.maxRestarts, periodMs: gaveUp.periodMs }
          })
        )
      })
    const refreshed = (descriptors: ReadonlyArray<McpTool>) =>
      Effect.sync(() => {
        state.tools = toTools(server, state, descriptors)
      })
    const connect = McpClient.connect(declaration, context.secrets, refreshed, credentials, {
      model: context.model,
      roots: context.roots,
      watchRoots: context.watchRoots,
      approve: context.approve,
      elicit: context.elicit
    })
    // The first connection opens now, concurrently with the session's other servers; the
    // supervisor, which starts children one at a time, adopts it as the child's first incarnation.
    const firstScope = yield* Scope.fork(yield* Scope.Scope)
    const first = yield* connect.pipe(Scope.provide(firstScope), Effect.onError((cause) => Scope.close(firstScope, Exit.failCause(cause))))
    let adopt: McpClient.Connection | undefined = first
    const incarnation = Effect.gen(function*() {
      const scope = yield* Scope.Scope
      let connection: McpClient.Connection
      if (adopt !== undefined) {
        connection = adopt
        adopt = undefined
        yield* Scope.addFinalizer(scope, Scope.close(firstScope, Exit.void))
      } else {
        connection = yield* connect
      }
      state.current = connection
      yield* refreshed(connection.descriptors)
      yield* context.emit({ _tag: "McpServerStarted", server: server.name, transport: declaration.transport, tools: state.tools.length })
      yield* Scope.addFinalizerExit(scope, (exit) =>
        Effect.suspend(() => {
          if (state.current === connection) state.current = undefined
          const gaveUp = Supervisor.gaveUp(exit)
          if (gaveUp !== undefined) return givenUp(gaveUp)
          return McpClient.isDown(connection) ? Effect.void : context.emit({ _tag: "McpServerStopped", server: server.name })
        }))
      return connection
    })
    yield* context.supervisor.startChild({
      id: `${CHILD_PREFIX}${server.name}`,
      restart,
      start: incarnation,
      run: (connection) =>
        McpClient.awaitDown(connection).pipe(Effect.catch((down) =>
          Effect.suspend(() => {
            if (state.current === connection) state.current = undefined
            // The connection's `down` holds only `TransportDown`s.
            const description = down.reason._tag === "TransportDown" ? down.reason.description : down.message
            // A stdio server that exited with code 0 ended on its own: a normal end, which only a
            // permanent server is restarted for. Any other end (a crash, a signal, every HTTP end)
            // fails the child, which transient and permanent servers are restarted for (ADR 0101).
            const clean = connection.exitCode?.() === 0
            state.reason = description
            // A temporary server is never restarted, and a transient one that ended cleanly is not.
            state.final = restart === "temporary" || (clean && restart !== "permanent")
            state.left = state.final
            return Effect.andThen(context.emit({ _tag: "McpServerDown", server: server.name, description }), clean ? Effect.void : Effect.fail(down))
          })
        ))
    }).pipe(Effect.mapError(failed(server, credentials)))
    // Nothing else waits on the supervisor: a give-up reaches the servers that were down then here.
    yield* Effect.forkIn(
      Effect.catch(context.supervisor.join, (error) => (error.reason._tag === "RestartIntensityExceeded" ? givenUp(error.reason) : Effect.void)),
      yield* Scope.Scope
    )
    const running: ToolSource.Running = { tools: Effect.sync(() => state.tools), secrets: credentials.secrets() }
    return running
  }).pipe(
    Effect.mapError((error) => (error._tag === "McpStartFailed" ? error : failed(server, credentials)(error))),
    Effect.withSpan("McpServer.start", { attributes: { server: server.name, transport: server.declaration.transport } })
  )
}

/** @since 0.1.0 @category models */
export interface StartAllOptions {
  /** Secrets the servers' pass-through `env` names may use. */
  readonly secrets?: ToolSource.StartContext["secrets"] | undefined
  /** Where the servers' events go (default: nowhere). */
  readonly emit?: ToolSource.StartContext["emit"] | undefined
}

/**
 * Starts `servers` in parallel in the current scope, under a supervisor of their own, and gives
 * their tools as they are now (read it again for `list_changed`). For callers without a session.
 *
 * @since 0.1.0
 * @category constructors
 */
export const startAll = (
  servers: ReadonlyArray<McpServer>,
  options: StartAllOptions = {}
): Effect.Effect<Effect.Effect<ReadonlyArray<Tool.Tool>>, Session.McpStartFailed, Scope.Scope | ProcessRunner.ProcessRunner> =>
  Effect.gen(function*() {
    const supervisor = yield* Effect.orDie(Supervisor.make())
    const context: ToolSource.StartContext = {
      sessionId: "",
      agent: "",
      secrets: options.secrets ?? {},
      redact: Redactor.secrets(options.secrets ?? {}).redact,
      supervisor,
      emit: options.emit ?? (() => Effect.void)
    }
    const running = yield* Effect.forEach(servers, (server) => server.start(context), { concurrency: "unbounded" })
    return Effect.map(Effect.forEach(running, (r) => r.tools), (lists) => lists.flat())
  })
