/**
 * A real headless Chromium for tests that open a page: Debian's `chromium`, installed by
 * scripts/chromium.sh when it is missing (CI starts from a clean machine, so the tests install
 * it themselves instead of skipping), driven with playwright-core (which downloads no browser);
 * and esbuild to bundle a page's entry module for it. A missing browser that cannot be installed
 * (not root) fails with the script's sentence saying what to install.
 */
import { Effect, Schema, type Scope } from "effect"
import * as esbuild from "esbuild"
import * as path from "node:path"
import { type Browser, chromium } from "playwright-core"
import { execIn, root } from "./exec.ts"

export class BrowserError extends Schema.TaggedError<BrowserError>()("BrowserError", {
  reason: Schema.Literals(["ChromiumMissing", "LaunchFailed", "BundleFailed"]),
  detail: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() { return `browser: ${this.reason}: ${this.detail}` }
}

/**
 * The Chromium executable's path, installing Debian's package first when it is missing. The
 * script runs once per process (its answer is cached): each test file that opens a page asks.
 */
export const ensureChromium: Effect.Effect<string, BrowserError> = Effect.runSync(Effect.cached(
  Effect.flatMap(
    Effect.orDie(execIn(root, "bash", [path.join(root, "scripts/chromium.sh")], process.env)),
    ({ exitCode, stderr, stdout }) =>
      exitCode === 0 && stdout.trim() !== ""
        ? Effect.succeed(stdout.trim())
        : Effect.fail(new BrowserError({ reason: "ChromiumMissing", detail: stderr.trim() || `scripts/chromium.sh exited ${exitCode}` }))
  )
))

/**
 * A headless Chromium closed with the scope. `--no-sandbox` because Chromium refuses its sandbox
 * as root (CI's containers run as root); `--disable-dev-shm-usage` keeps it off a small `/dev/shm`.
 */
export const launchBrowser: Effect.Effect<Browser, BrowserError, Scope.Scope> = Effect.flatMap(
  ensureChromium,
  (executablePath) =>
    Effect.acquireRelease(
      Effect.tryPromise({
        try: () => chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-dev-shm-usage"] }),
        catch: (cause) => new BrowserError({ reason: "LaunchFailed", detail: `${executablePath} did not start`, cause })
      }),
      (browser) => Effect.promise(() => browser.close())
    )
)

/**
 * One ES module of JavaScript for the browser: `entry` (a path from the repository root) and what it
 * imports from the workspace's node_modules, JSX with React's automatic runtime, React's production build.
 */
export const bundle = (entry: string): Effect.Effect<string, BrowserError> =>
  Effect.tryPromise({
    try: () =>
      esbuild.build({
        entryPoints: [path.join(root, entry)],
        bundle: true,
        write: false,
        format: "esm",
        platform: "browser",
        target: "es2022",
        jsx: "automatic",
        define: { "process.env.NODE_ENV": JSON.stringify("production") },
        logLevel: "silent"
      }),
    catch: (cause) => new BrowserError({ reason: "BundleFailed", detail: entry, cause })
  }).pipe(Effect.map((result) => result.outputFiles.map((file) => file.text).join("")))
