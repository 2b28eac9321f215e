/**
 * LocalSandbox against the public conformance suite: once rooted at a fresh temporary directory,
 * once more with `allowedPaths` set to that directory, which must change nothing for paths inside it.
 */
import * as SandboxConformance from "@condukt/testing/SandboxConformance"
import { Effect, Layer } from "effect"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Condukt from "../../src/Condukt.ts"
import * as LocalSandbox from "../../src/sandbox/Local.ts"

/** A Local sandbox over its own temporary directory, removed when the layer is released. */
const inTempDir = (options: (dir: string) => LocalSandbox.Options) =>
  Layer.unwrap(
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), "condukt-conformance-local-")))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      ),
      (dir) => LocalSandbox.layer(options(dir)).pipe(Layer.provide(Condukt.layer))
    )
  )

const capabilities = { glob: true, grep: true, mount: false }

SandboxConformance.run("LocalSandbox", inTempDir((cwd) => ({ cwd })), { ...capabilities, hostFiles: "everywhere" })

SandboxConformance.run(
  "LocalSandbox with allowedPaths",
  inTempDir((cwd) => ({ cwd, allowedPaths: [cwd] })),
  { ...capabilities, hostFiles: "cwd" }
)
