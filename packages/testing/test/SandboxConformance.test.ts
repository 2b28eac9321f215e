/**
 * The conformance suite run against the smallest sandbox that can pass it: files in a Map, and an
 * exec that interprets just the shell the suite speaks (`;`, `&&`, `cd`, `export`, `echo`, `pwd`,
 * `cat`, `printf … > file`, `exit`, an endless loop). It has no glob, grep or mount, so the suite's
 * NotSupported branch runs for all three. The interpreter keeps its cwd and env per call, so the
 * statelessness test checks real state, not a canned answer.
 */
import { Sandbox } from "@condukt/core"
import { Effect, Layer, Stream } from "effect"
import * as path from "node:path"
import * as SandboxConformance from "../src/SandboxConformance.ts"

const encoder = new TextEncoder()
const decoder = new TextDecoder()

const fail = (method: string, reason: Sandbox.Reason) => new Sandbox.SandboxError({ method, reason })

/** One call's shell state; it dies with the call. */
interface Shell {
  dir: string
  readonly env: Record<string, string>
  output: string
}

/** Words of a simple command: quotes removed, `$NAME` expanded outside single quotes. */
const words = (text: string, env: Readonly<Record<string, string>>): Array<string> =>
  Array.from(text.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g), ([, single, double, bare]) =>
    single ?? (double ?? bare ?? "").replace(/\$(\w+)/g, (_, name: string) => env[name] ?? ""))

/** Each `;` or `&&` and the simple command after it (a lone `&`, as in `>&2`, is part of the command). */
const steps = /(;|&&)\s*((?:[^;&]|&(?!&))+?)\s*(?=;|&&|$)/g

/** Splits `command > file` (stdout to a file) and drops `>&2` (one output stream anyway). */
const redirection = (command: string): { readonly command: string; readonly target: string | undefined } => {
  const match = /^(.*?)\s*>\s*(\S+)$/.exec(command)
  if (match === null) return { command, target: undefined }
  return { command: match[1] ?? "", target: match[2] === "&2" ? undefined : match[2] }
}

const memoryPrimitives = (cwd: string): Sandbox.Primitives => {
  const files = new Map<string, Uint8Array>()
  const resolve = (from: string, file: string) => path.posix.resolve(from, file)
  const isDirectory = (absolute: string) => [...files.keys()].some((key) => key.startsWith(`${absolute}/`))

  const readStream = (file: string) =>
    Stream.fromEffect(Effect.suspend(() => {
      const absolute = resolve(cwd, file)
      const bytes = files.get(absolute)
      if (bytes !== undefined) return Effect.succeed(bytes)
      const reason = isDirectory(absolute)
        ? new Sandbox.IsDirectory({ path: file })
        : new Sandbox.NotFound({ path: file })
      return Effect.fail(fail("readStream", reason))
    }))

  const writeFile = (file: string, content: string | Uint8Array) =>
    Effect.suspend(() => {
      const absolute = resolve(cwd, file)
      if (isDirectory(absolute)) return Effect.fail(fail("writeFile", new Sandbox.IsDirectory({ path: file })))
      files.set(absolute, typeof content === "string" ? encoder.encode(content) : content)
      return Effect.void
    })

  /** Runs one simple command: its exit status, or `{ exit }` when it ends the script. */
  const simple = (shell: Shell, step: string): number | { readonly exit: number } => {
    const { command, target } = redirection(step)
    const [name, ...args] = words(command, shell.env)
    const write = (text: string) => {
      if (target === undefined) shell.output += text
      else files.set(resolve(shell.dir, target), encoder.encode(text))
    }
    switch (name) {
      case "exit":
        return { exit: Number(args[0] ?? 0) }
      case "true":
        return 0
      case "cd":
        shell.dir = resolve(shell.dir, args[0] ?? cwd)
        return 0
      case "export": {
        const [key = "", value = ""] = (args[0] ?? "").split("=")
        shell.env[key] = value
        return 0
      }
      case "pwd":
        write(`${shell.dir}\n`)
        return 0
      case "echo":
        write(`${args.join(" ")}\n`)
        return 0
      case "printf":
        write(args[0] ?? "")
        return 0
      case "cat": {
        const bytes = files.get(resolve(shell.dir, args[0] ?? ""))
        write(bytes === undefined ? `cat: ${args[0]}: No such file or directory\n` : decoder.decode(bytes))
        return bytes === undefined ? 1 : 0
      }
      default:
        write(`${name}: command not found\n`)
        return 127
    }
  }

  const run = (script: string, options?: Sandbox.ExecOptions): Effect.Effect<Sandbox.ExecResult> =>
    Effect.suspend(() => {
      // The loops the suite sends end only by the timeout interrupting them (this double keeps no output then).
      if (script.includes("while true;")) return Effect.never
      const shell: Shell = { dir: resolve(cwd, options?.cwd ?? "."), env: { ...options?.env }, output: "" }
      let exitCode = 0
      for (const [, separator, step = ""] of `; ${script}`.matchAll(steps)) {
        if (separator === "&&" && exitCode !== 0) continue
        const status = simple(shell, step)
        if (typeof status !== "number") {
          exitCode = status.exit
          break
        }
        exitCode = status
      }
      return Effect.succeed({ output: shell.output, exitCode, truncated: false })
    })

  const exec = (script: string, options?: Sandbox.ExecOptions) => {
    if (options?.timeout === undefined) return run(script, options)
    const timeoutMs = Sandbox.timeoutMillis(options.timeout)
    return Effect.timeoutOrElse(run(script, options), {
      duration: options.timeout,
      orElse: () => Effect.fail(fail("exec", new Sandbox.Timeout({ timeoutMs })))
    })
  }

  return { cwd, readStream, writeFile, exec }
}

SandboxConformance.run(
  "SandboxConformance on a Map-backed sandbox without glob, grep or mount",
  Layer.sync(Sandbox.Sandbox, () => Sandbox.make(memoryPrimitives("/work"))),
  { glob: false, grep: false, mount: false }
)

SandboxConformance.run(
  "SandboxConformance with a function returning the layer, rooted at /",
  () => Sandbox.layer(memoryPrimitives("/")),
  { glob: false, grep: false, mount: false }
)
