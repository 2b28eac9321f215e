/**
 * Workflow — the package's front door: HCL source or a file to a validated document (`parse`,
 * `load`), a file checked (`check`), a document run (`run`, the executor's). Files must end in
 * `.hcl`: Condukt's engine refuses JSON and YAML workflows, and so do we.
 */
import { Effect, FileSystem } from "effect"
import type * as Document from "./Document.ts"
import * as Executor from "./Executor.ts"
import * as HclCompiler from "./HclCompiler.ts"
import * as Validator from "./Validator.ts"
import { WorkflowInvalid } from "./WorkflowError.ts"

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
    return yield* new WorkflowInvalid({ reason: "UnsupportedExtension", location: path, detail: "a workflow file must end in .hcl" })
  }
  const fs = yield* FileSystem.FileSystem
  const source = yield* Effect.mapError(
    fs.readFileString(path),
    (error) => new WorkflowInvalid({ reason: "ReadFailed", location: path, detail: `cannot read the file: ${error.message}` })
  )
  return yield* parse(source, path)
})

/**
 * Loads a file and discards the document: succeeds when it is valid.
 *
 * @since 0.1.0
 * @category constructors
 */
export const check = (path: string): Effect.Effect<void, WorkflowInvalid, FileSystem.FileSystem> => Effect.asVoid(load(path))

/**
 * Runs a document (see `Executor.run`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const run: typeof Executor.run = Executor.run
