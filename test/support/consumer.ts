/**
 * Consumer — a project outside the workspace that installed every package the way a user does,
 * by the steps of docs/your-project.md: the packages built (`tsc -b`) and packed (`pnpm -r pack`,
 * every package under packages/) into `tarballs/`, a fresh `project/` beside it holding the
 * guide's `package.json`, `tsconfig.json` and `src/main.ts` as the page spells them, and the
 * guide's one `npm install` line run there (plain npm, no workspace links), with `effect` at
 * another 4.1 patch than the workspace's. Built once per test file as a Layer, removed with it.
 *
 * The registry has no later 4.1 patch of effect yet, so the consumer's effect is the workspace's
 * own copy repacked one patch up: what matters is that npm sees a version other than the one our
 * packages were built against, as a user's program on the next patch would.
 */
import { Context, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { execIn, root } from "./exec.ts"
import { TempDir } from "@condukt/testing"

/** A step of building the consumer that exited non-zero. */
export class StepFailed extends Schema.TaggedError<StepFailed>()("StepFailed", {
  step: Schema.String,
  output: Schema.String
}) {
  override get message() {
    return `${this.step} failed:\n${this.output}`
  }
}

export interface WorkspacePackage {
  readonly dir: string
  readonly manifest: {
    readonly name: string
    readonly version: string
    readonly exports: Record<string, string | null>
    readonly bin?: string | Record<string, string>
  }
}

const readJson = (file: string) => JSON.parse(fs.readFileSync(file, "utf8"))

const rootManifest = readJson(path.join(root, "package.json"))

/** Every directory under packages/ with a package.json: each one is packed and installed. */
export const workspacePackages: ReadonlyArray<WorkspacePackage> = fs.readdirSync(path.join(root, "packages"))
  .map((name) => path.join(root, "packages", name))
  .filter((dir) => fs.existsSync(path.join(dir, "package.json")))
  .sort()
  .map((dir) => ({ dir, manifest: readJson(path.join(dir, "package.json")) }))

/** The executables the packages declare, by the name a user types after `npx`. */
export const bins: ReadonlyArray<{ readonly bin: string; readonly version: string }> = workspacePackages.flatMap(
  ({ manifest }) => {
    const bin = manifest.bin
    if (bin === undefined) return []
    const names = typeof bin === "string" ? [manifest.name.replace(/^@[^/]+\//, "")] : Object.keys(bin)
    return names.map((name) => ({ bin: name, version: manifest.version }))
  }
)

/** The file `pnpm pack` names a package's tarball. */
export const tarballName = ({ name, version }: WorkspacePackage["manifest"]) =>
  `${name.replace(/^@/, "").replace("/", "-")}-${version}.tgz`

/**
 * This process's environment without what pnpm and vitest add to it, with the workspace's Node 22
 * first on PATH: npm and node as a user's shell runs them.
 */
export const plainEnv = (): Record<string, string | undefined> => ({
  ...Object.fromEntries(
    Object.entries(process.env).filter(([key]) =>
      !/^(npm_|pnpm_|vitest|node_options$|node_env$|node_path$|test$)/i.test(key)
    )
  ),
  PATH: [path.join(root, "node_modules/.bin"), process.env["PATH"] ?? ""].join(path.delimiter)
})

/**
 * docs/your-project.md, as test/pack.test.ts follows it: each block after `<!-- file: PATH -->`
 * (the files to write), the command after `<!-- install -->`, and each after `<!-- run: NAME -->`.
 */
export const guide = (() => {
  const page = fs.readFileSync(path.join(root, "docs/your-project.md"), "utf8")
  const files = new Map<string, string>()
  const runs = new Map<string, string>()
  const installs: Array<string> = []
  for (const [, marker, body] of page.matchAll(/<!-- ([^>]+?) -->\n```\w+\n([\s\S]*?)```/g)) {
    if (marker!.startsWith("file: ")) files.set(marker!.slice("file: ".length), body!)
    else if (marker!.startsWith("run: ")) runs.set(marker!.slice("run: ".length), body!.trim())
    else if (marker === "install") installs.push(body!.trim())
  }
  if (installs.length !== 1) throw new Error(`docs/your-project.md: ${installs.length} install lines, not one`)
  return { files, install: installs[0]!, runs }
})()

/** Runs a shell command line with `plainEnv`, as a user's shell would; stdout and stderr apart. */
export const shell = (cwd: string, line: string) => execIn(cwd, "sh", ["-c", line], plainEnv())

/** Runs a command with `plainEnv`: its stdout, or a failure with all its output unless it exits 0. */
export const step = (name: string, cwd: string, file: string, args: ReadonlyArray<string>) =>
  Effect.flatMap(
    execIn(cwd, file, args, plainEnv()),
    ({ exitCode, stderr, stdout }) =>
      exitCode === 0
        ? Effect.succeed(stdout)
        : Effect.fail(new StepFailed({ step: `${name} (exit code ${exitCode})`, output: `${stdout}${stderr}` }))
  )

/** The installed consumer project. */
export class Consumer extends Context.Service<Consumer, {
  readonly dir: string
  readonly tarballs: ReadonlyMap<string, string>
  readonly effectVersion: string
  /** What the guide's `npm install` line printed, stdout then stderr. */
  readonly installOutput: string
}>()("test/Consumer") {}

const tempDir = TempDir.make("condukt-consumer-")

/** Repacks the workspace's effect one patch up; returns the tarball and its version. */
const effectNextPatch = (dir: string) =>
  Effect.gen(function*() {
    const source = fs.realpathSync(path.join(root, "node_modules/effect"))
    const manifest = readJson(path.join(source, "package.json"))
    const [major, minor, patch] = String(manifest.version).split(".").map(Number)
    const version = `${major}.${minor}.${patch! + 1}`
    const staging = path.join(dir, "effect-repack")
    fs.cpSync(source, path.join(staging, "package"), { recursive: true })
    fs.writeFileSync(path.join(staging, "package/package.json"), JSON.stringify({ ...manifest, version }, null, 2))
    const tarball = path.join(dir, `effect-${version}.tgz`)
    yield* step("tar (effect)", staging, "tar", ["czf", tarball, "package"])
    fs.rmSync(staging, { recursive: true, force: true })
    return { tarball, version }
  })

export const layer = Layer.effect(
  Consumer,
  Effect.gen(function*() {
    const dir = yield* tempDir
    yield* step("tsc -b (the packages)", root, path.join(root, "node_modules/.bin/tsc"), [
      "-b",
      ...workspacePackages.map(({ dir }) => path.join(dir, "tsconfig.build.json"))
    ])
    const packed = path.join(dir, "tarballs")
    yield* step("pnpm pack", root, "npx", ["-y", rootManifest.packageManager, "-r", "pack", "--pack-destination", packed])
    const tarballs = new Map(workspacePackages.map(({ manifest }) => [manifest.name, path.join(packed, tarballName(manifest))]))
    for (const [name, file] of tarballs) {
      if (!fs.existsSync(file)) return yield* new StepFailed({ step: "pnpm pack", output: `no tarball for ${name}` })
    }
    const effect = yield* effectNextPatch(dir)

    const project = path.join(dir, "project")
    fs.mkdirSync(path.join(project, "work"), { recursive: true })
    fs.writeFileSync(path.join(project, "work/hello.txt"), "hello from the host\n")
    for (const [file, text] of guide.files) {
      fs.mkdirSync(path.dirname(path.join(project, file)), { recursive: true })
      fs.writeFileSync(path.join(project, file), text)
    }
    for (const file of ["program.js", "consumer.ts"]) {
      fs.copyFileSync(path.join(root, "test/consumer", file), path.join(project, file))
    }
    fs.copyFileSync(path.join(root, "test/consumer/tsconfig.json"), path.join(project, "tsconfig.strict.json"))
    // The guide's line as written, but for `effect`, one patch up; the last three flags change
    // nothing installed (no audit, no funding notice, the cache first).
    const line = guide.install.split(" ").map((word) => word === "effect" ? effect.tarball : word).join(" ")
    const { exitCode, stderr, stdout } = yield* shell(project, `${line} --no-audit --no-fund --prefer-offline`)
    if (exitCode !== 0) return yield* new StepFailed({ step: `npm install (exit code ${exitCode})`, output: `${stdout}${stderr}` })
    return { dir: project, tarballs, effectVersion: effect.version, installOutput: `${stdout}${stderr}` }
  })
)
