/**
 * Workflow — the package's front door: HCL source or a file to a validated document (`parse`,
 * `load`), a file checked (`check`), a document run (`run`, the run engine's). Files must end in
 * `.hcl`: Condukt's engine refuses JSON and YAML workflows, and so do we. A file is read only when
 * it is a regular file (after following links) of at most `MAX_FILE_BYTES`: a named pipe would
 * block the read forever and a link to a device would never end it.
 */
import { Effect, FileSystem, Option, type PlatformError } from "effect"
import type * as Document from "./Document.ts"
import * as RunEngine from "./RunEngine.ts"
import * as HclCompiler from "./HclCompiler.ts"
import * as Validator from "./Validator.ts"
import { McpServersError, warnings as serverWarnings } from "./McpServers.ts"
import { type InvalidReason, type WorkflowFailed, WorkflowInvalid } from "./WorkflowError.ts"

/**
 * The largest workflow file read (1 MiB): a workflow is a page of HCL, not a data file.
 *
 * @since 0.1.0
 * @category models
 */
export const MAX_FILE_BYTES = 1024 * 1024

const KINDS: Readonly<Record<FileSystem.File.Type, string>> = {
  File: "a regular file",
  Directory: "a directory",
  SymbolicLink: "a symbolic link",
  BlockDevice: "a block device",
  CharacterDevice: "a character device",
  FIFO: "a named pipe",
  Socket: "a socket",
  Unknown: "not a regular file"
}

/** Why a file cannot be read, in words (`no such file`), not the call that failed. */
const SYSTEM_REASONS: Partial<Record<PlatformError.SystemErrorTag, string>> = {
  NotFound: "no such file",
  PermissionDenied: "permission denied",
  Busy: "the file is busy",
  TimedOut: "reading it timed out"
}

const why = (error: PlatformError.PlatformError): string =>
  error.reason._tag === "BadArgument" ? error.reason.message : SYSTEM_REASONS[error.reason._tag] ?? error.reason.message

/** The file's text, read only when it is a regular file of at most `MAX_FILE_BYTES`. */
const readBounded = Effect.fnUntraced(function*(path: string) {
  const fs = yield* FileSystem.FileSystem
  // Its message reads `cannot read <path>: <why>`.
  const unreadable = (error: PlatformError.PlatformError) => new WorkflowInvalid({ reason: "ReadFailed", location: path, description: why(error) })
  const notRegular = (type: FileSystem.File.Type) =>
    new WorkflowInvalid({ reason: "NotRegularFile", location: path, description: `it is ${KINDS[type]}, not a regular file; a workflow must be a regular .hcl file` })
  const tooLarge = new WorkflowInvalid({
    reason: "FileTooLarge",
    location: path,
    description: `the file is larger than ${MAX_FILE_BYTES} bytes (1 MiB), the most a workflow file may have`
  })
  // stat follows links: a link to /dev/zero is a character device, refused before it is opened.
  const info = yield* Effect.mapError(fs.stat(path), unreadable)
  if (info.type !== "File") return yield* notRegular(info.type)
  if (Number(info.size) > MAX_FILE_BYTES) return yield* tooLarge
  return yield* Effect.scoped(Effect.gen(function*() {
    const file = yield* Effect.mapError(fs.open(path, { flag: "r" }), unreadable)
    // The path may have been swapped after stat: what was opened is checked again, and read
    // only up to one byte past the bound, however long it grows.
    const opened = yield* Effect.mapError(file.stat, unreadable)
    if (opened.type !== "File") return yield* notRegular(opened.type)
    const chunks: Array<Uint8Array> = []
    let total = 0
    while (total <= MAX_FILE_BYTES) {
      const chunk = yield* Effect.mapError(file.readAlloc(MAX_FILE_BYTES + 1 - total), unreadable)
      if (Option.isNone(chunk)) break
      chunks.push(chunk.value)
      total += chunk.value.length
    }
    if (total > MAX_FILE_BYTES) return yield* tooLarge
    const bytes = new Uint8Array(total)
    let at = 0
    for (const chunk of chunks) {
      bytes.set(chunk, at)
      at += chunk.length
    }
    return new TextDecoder().decode(bytes)
  }))
})

/**
 * HCL source to a validated document; `file` names it in errors.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parse = (source: string, file = "workflow.hcl"): Effect.Effect<Document.Document, WorkflowInvalid> =>
  Effect.flatMap(HclCompiler.compile(source, file), (raw) => Validator.validate(raw, file))

/**
 * Reads and parses a `.hcl` file.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load: (path: string) => Effect.Effect<Document.Document, WorkflowInvalid, FileSystem.FileSystem> = Effect.fn(
  "Workflow.load"
)(function*(path: string) {
  if (!path.endsWith(".hcl")) {
    return yield* new WorkflowInvalid({ reason: "UnsupportedExtension", location: path, description: "a workflow file must end in .hcl" })
  }
  return yield* parse(yield* readBounded(path), path)
})

/** A run's check (`RunEngine.plan`) refusing the document, as a validation error at its block path. */
const planInvalid = (path: string) => (error: WorkflowFailed): WorkflowInvalid => {
  const steps = error.step === "" ? "workflow.steps" : `workflow.steps.${error.step}`
  const [reason, block]: readonly [InvalidReason, string] = error.reason === "Cycle"
    ? ["Cycle", "workflow.steps"]
    : error.reason === "UnknownDependency"
    ? ["UnknownDependency", steps]
    : error.reason === "UnknownMember"
    ? ["UnknownMember", error.step === "" ? "workflow.output" : steps]
    : error.reason === "AgentFailed"
    ? ["ModelUnavailable", steps]
    : error.reason === "InvalidInputs"
    ? ["InvalidDefault", "workflow.inputs"]
    : ["InvalidMcpServer", `workflow.mcp_servers${error.cause instanceof McpServersError ? `.${error.cause.server}` : ""}`]
  const description = error.cause instanceof McpServersError ? error.cause.description : error.description
  return new WorkflowInvalid({ reason, location: `${path}: ${block}`, description })
}

/**
 * Makes every check a run makes before its first step (`RunEngine.plan`: the graph, the members
 * read of step outputs, input defaults, MCP server declarations, the agent steps' models) on a
 * loaded document; `file` names it in errors. With `keys: false` a model whose provider has no
 * API key passes (`missingKeys` names them): a check that needs no key.
 *
 * @since 0.1.0
 * @category constructors
 */
export const verify = (document: Document.Document, file: string, options: RunEngine.PlanOptions = {}): Effect.Effect<void, WorkflowInvalid> =>
  Effect.asVoid(Effect.mapError(RunEngine.plan(document, options), planInvalid(file)))

/**
 * The agent steps whose model's provider has no API key (the first step using each model), as
 * warnings: what `condukt check` says without failing, since a run may bring the key, or a
 * scripted model, later.
 *
 * @since 0.1.0
 * @category constructors
 */
export const missingKeys = (document: Document.Document, file: string, options: RunEngine.PlanOptions = {}): Effect.Effect<ReadonlyArray<Warning>> =>
  Effect.map(RunEngine.missingKeys(document, options), (failures) =>
    failures.map((failure) => ({ location: `${file === "" ? "" : `${file}: `}workflow.steps.${failure.step}`, description: failure.description })))

/**
 * Something a document holds that a run accepts but does not use (`auth` on a stdio server).
 *
 * @since 0.1.0
 * @category models
 */
export interface Warning {
  /** The file, when known, and the block path. */
  readonly location: string
  readonly description: string
}

/**
 * What `document` holds unused, for `condukt check` and `condukt run` to say alike; `file` names
 * it in locations.
 *
 * @since 0.1.0
 * @category constructors
 */
export const warnings = (document: Document.Document, file: string): ReadonlyArray<Warning> =>
  serverWarnings(document.mcp_servers ?? {}).map((warning) => ({
    location: `${file === "" ? "" : `${file}: `}workflow.mcp_servers.${warning.server}`,
    description: warning.description
  }))

/**
 * Loads a file and verifies it: succeeds when only inputs, the sandbox or the servers' answers
 * can still fail a run.
 *
 * @since 0.1.0
 * @category constructors
 */
export const check = (path: string): Effect.Effect<void, WorkflowInvalid, FileSystem.FileSystem> =>
  Effect.flatMap(load(path), (document) => verify(document, path))

/**
 * Runs a document (see `RunEngine.run`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const run: typeof RunEngine.run = RunEngine.run
