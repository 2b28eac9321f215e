/**
 * The browser build of the core: esbuild bundles an entry module (page.ts, worker.ts, or any
 * program on the platform-free packages) into one ES module for a browser, as an application
 * would (`platform: "browser"`, so just-bash resolves to its browser build). Used by
 * test/browser-core.test.ts and bench/browser-bundle.ts.
 *
 * One thing is configured beyond esbuild's defaults: just-bash's browser build still imports
 * `node:zlib` for its `gzip`, `gunzip` and `zcat` commands (and `rg -z`), which its
 * documentation says fail in a browser. Vite replaces a Node built-in with an empty module on its
 * own (with a warning); esbuild and webpack must be told. Here it becomes a module whose functions
 * throw, so those commands fail with "zlib is not available in a browser" and the rest run.
 *
 * Nothing else: @condukt/sandbox-virtual's host mounts (`node:fs`, just-bash's Node-only
 * `OverlayFs`) are chosen by the package itself, its `#hostMount` import mapping to a module that
 * mounts nothing under the `browser` condition, which esbuild sets for `platform: "browser"`
 * (ADR 0094).
 *
 * The build fails on any other `node:` import: what the core pulls must run where no Node runs.
 */
import { Effect } from "effect"
import * as esbuild from "esbuild"
import * as path from "node:path"
import { BrowserError } from "../browser.ts"
import { root } from "../exec.ts"

/** The module `node:zlib` becomes: what just-bash imports from it, each refusing. */
const zlibStub = `
const refuse = () => { throw new Error("zlib is not available in a browser") }
export const gzipSync = refuse
export const gunzipSync = refuse
export const constants = { Z_BEST_COMPRESSION: 9, Z_BEST_SPEED: 1, Z_DEFAULT_COMPRESSION: -1 }
`

const noZlib: esbuild.Plugin = {
  name: "no-zlib",
  setup(build) {
    build.onResolve({ filter: /^node:zlib$/ }, () => ({ path: "node:zlib", namespace: "no-zlib" }))
    build.onLoad({ filter: /.*/, namespace: "no-zlib" }, () => ({ contents: zlibStub, loader: "js" }))
  }
}

/** One bundle: its code, and esbuild's metafile (which input pulled which). */
export interface Bundle {
  readonly code: string
  readonly metafile: esbuild.Metafile
}

/**
 * What to bundle: a module's path from the repository root, or source resolved from a directory
 * (from the repository root, or absolute: a project outside the workspace, as test/pack.test.ts
 * bundles from the packed packages' install).
 */
export type Entry = string | { readonly contents: string; readonly resolveDir: string }

/** How to bundle: `minify` as a release would; `external` packages left out (imported, not bundled). */
export interface Options {
  readonly minify?: boolean | undefined
  readonly external?: ReadonlyArray<string> | undefined
}

/** Bundles `entry` for a browser; esbuild's errors (an unresolved `node:` import among them) are the failure's cause. */
export const build = (entry: Entry, options: Options = {}): Effect.Effect<Bundle, BrowserError> => {
  const input: esbuild.BuildOptions = typeof entry === "string"
    ? { entryPoints: [path.join(root, entry)] }
    : { stdin: { contents: entry.contents, resolveDir: path.resolve(root, entry.resolveDir), loader: "ts" } }
  return Effect.tryPromise({
    try: () =>
      esbuild.build({
        ...input,
        bundle: true,
        write: false,
        format: "esm",
        platform: "browser",
        target: "es2022",
        minify: options.minify ?? false,
        external: [...(options.external ?? [])],
        metafile: true,
        plugins: [noZlib],
        logLevel: "silent"
      }),
    catch: (cause) => new BrowserError({ reason: "BundleFailed", detail: typeof entry === "string" ? entry : entry.contents, cause })
  }).pipe(Effect.map((result) => ({ code: result.outputFiles.map((file) => file.text).join(""), metafile: result.metafile })))
}
