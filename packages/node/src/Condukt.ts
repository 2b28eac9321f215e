/**
 * Condukt — the composition root: the default layer and one-shot runs.
 *
 * `layer` chooses the Node defaults once (the host services, one process budget for the whole
 * program, a LocalSandbox at the process's working directory for sessions that name no sandbox,
 * every model provider over one HTTP client, Effect's over Node's `fetch`). `run` and `stream` start an
 * anonymous, transient session for one prompt and stop it afterwards, releasing everything it owned.
 */
// First, before the platform is evaluated: refuses an unsupported Node with one sentence.
import "./internal/supportedNode.ts"
// @effect/platform-node-shared, not @effect/platform-node: the latter declares a `redis` peer that
// npm installs with it (docs/your-project.md, ADR 0053).
import * as NodeFileSystem from "@effect/platform-node-shared/NodeFileSystem"
import * as NodePath from "@effect/platform-node-shared/NodePath"
import { Effect, Fiber, type FileSystem, Layer, type Path, type Scope, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import * as Agent from "@condukt/core/Agent"
import * as Model from "@condukt/core/Model"
import type * as Output from "@condukt/core/Output"
import * as ProcessBudget from "@condukt/core/ProcessBudget"
import type * as ProcessRunner from "@condukt/core/ProcessRunner"
import * as NodeProcessRunner from "./processRunner/Node.ts"
import * as Anthropic from "@condukt/providers/Anthropic"
import * as Google from "@condukt/providers/Google"
import * as OpenAi from "@condukt/providers/OpenAi"
import * as OpenAiResponses from "@condukt/providers/OpenAiResponses"
import * as LocalSandbox from "./sandbox/Local.ts"
import * as Session from "@condukt/core/Session"
import type * as SessionEvent from "@condukt/core/SessionEvent"
import type * as Tool from "@condukt/core/Tool"
import type * as ToolSource from "@condukt/core/ToolSource"

/** What LocalSandbox, Tools.Command, 1Password and stdio MCP need from the host, the process budget built once for the program. */
type Host = FileSystem.FileSystem | Path.Path | ProcessBudget.ProcessBudget | ProcessRunner.ProcessRunner

const host: Layer.Layer<Host> = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, ProcessBudget.layer(), NodeProcessRunner.layer)

// The default sandbox is a layer each session builds on its own; it gets the program's host
// services (one process budget for every session), so it needs nothing more.
const defaultSandbox = Layer.effect(
  Session.DefaultSandbox,
  Effect.map(Effect.context<Host>(), (services) => LocalSandbox.layer().pipe(Layer.provide(Layer.succeedContext(services))))
)

// Every provider, each reading its key and base URL from the environment when a model is first
// resolved: a program without a key for a provider it never uses starts fine. They rank as
// defaults, so a provider layer the program provides itself wins, inside or around this one.
const providers: Layer.Layer<Model.Providers> = Model.layerDefaults(
  Layer.mergeAll(OpenAi.layerPresets, OpenAi.layer(), OpenAiResponses.layer(), Anthropic.layer(), Google.layer())
).pipe(Layer.provide(FetchHttpClient.layer))

/**
 * The defaults for Node programs: the Node filesystem and paths, the program's process budget
 * (`ProcessBudget.DEFAULT_PER_CORE` per core) and process runner (`NodeProcessRunner`), a LocalSandbox at the cwd for sessions without
 * a sandbox, and every model provider (`anthropic:…`, `openai:…`, `openai-responses:…`, `google:…` and the OpenAI-compatible presets, keys
 * and base URLs from the environment).
 * `LocalSandbox.layer(...)` and `Tools.Command(...)` need nothing else.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Host | Model.Providers> = Layer.merge(defaultSandbox.pipe(Layer.provideMerge(host)), providers)

/**
 * A one-shot run: the agent's fields, the session's start options and the run's own; `RIn` is what
 * the `sandbox` layer needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions<R, RIn = never> extends Session.StartOptions<RIn>, Session.RunOptions {
  readonly model: string
  readonly tools?: ReadonlyArray<Tool.Tool<R>> | undefined
  readonly system?: string | undefined
  /** MCP servers (from `@condukt/mcp`) this run's session starts and stops. */
  readonly mcpServers?: ReadonlyArray<ToolSource.ToolSource<R>> | undefined
  /** Names the anonymous agent in events and traces (default `anonymous`). */
  readonly name?: string | undefined
  /**
   * Sees every event of the run as it happens (a progress display), with the run's session (to
   * answer an `ApprovalRequested`, unless the `answerer` option does, or abort); the run waits for
   * none of them, and `run` returns once the last one was handed over.
   */
  readonly onEvent?: ((event: SessionEvent.SessionEvent, session: Session.Session) => Effect.Effect<void>) | undefined
}

const anonymous = <R, RIn>(options: RunOptions<R, RIn>) =>
  Agent.make<R>({
    name: options.name ?? "anonymous",
    model: options.model,
    system: options.system,
    tools: options.tools,
    mcpServers: options.mcpServers
  })

const transient = <R, RIn>(
  options: RunOptions<R, RIn>
): Effect.Effect<Session.Session, Session.StartError, R | RIn | Scope.Scope> =>
  Session.start(anonymous(options), options)

/**
 * Runs one prompt on a fresh session and returns its result.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run: {
  <S extends Output.Output, R = never, RIn = never>(
    prompt: string,
    options: RunOptions<R, RIn> & { readonly output: S }
  ): Effect.Effect<Session.TypedResult<S["Type"]>, Session.RunError | Session.StartError, R | RIn>
  <R = never, RIn = never>(
    prompt: string,
    options: RunOptions<R, RIn>
  ): Effect.Effect<Session.RunResult, Session.RunError | Session.StartError, R | RIn>
} = (<R = never, RIn = never>(
  prompt: string,
  options: RunOptions<R, RIn>
): Effect.Effect<Session.RunResult, Session.RunError | Session.StartError, R | RIn> =>
  Effect.scoped(Effect.flatMap(transient(options), (session) =>
    options.onEvent === undefined ? session.run(prompt, options) : observed(session, prompt, options, options.onEvent))).pipe(
    Effect.withSpan("Condukt.run")
  )) as typeof run // with an `output`, the session decoded `value` with it

/**
 * `session.run` with its events handed to `onEvent`: the observer subscribes before the run is
 * queued (`startImmediately`), and stopping the session ends its stream after the last event, so
 * the run's result comes after every event it made.
 */
const observed = (
  session: Session.Session,
  prompt: string,
  options: Session.RunOptions,
  onEvent: (event: SessionEvent.SessionEvent, session: Session.Session) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const observer = yield* Effect.forkScoped(Stream.runForEach(session.events, (event) => onEvent(event, session)), { startImmediately: true })
    const result = yield* Effect.exit(session.run(prompt, options))
    yield* session.stop
    yield* Fiber.join(observer)
    return yield* result
  })

/**
 * Streams the events of one prompt on a fresh session; the session ends with the stream.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stream = <R = never, RIn = never>(
  prompt: string,
  options: RunOptions<R, RIn>
): Stream.Stream<SessionEvent.SessionEvent, Session.StartError, R | RIn> =>
  Stream.unwrap(Effect.map(transient(options), (session) => session.stream(prompt, options)))
