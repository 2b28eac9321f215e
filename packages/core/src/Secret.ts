/**
 * Secret — where a secret's value comes from, as an inert value resolved once at session start.
 *
 * A `Secret` describes a source (an environment variable, a literal, 1Password's `op read`, any
 * Effect); `resolveAll` resolves a session's secrets concurrently into `Redacted` values, keyed by
 * the environment variable name they will have in processes. Values go to process environments and
 * auth headers only; everything the model reads passes through the `Redactor` first. A failure
 * names the secret and what went wrong, never its value. This module refuses to cache, retry or log
 * values, and to accept a name a process environment could not carry.
 */
import { Config, Duration, Effect, Redacted, Schema } from "effect"
import * as ProcessRunner from "./ProcessRunner.ts"

// ---------------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------------

/**
 * A source of one secret value; `R` is what resolving it needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface Secret<out R = never> {
  readonly _tag: "Secret"
  /** Names the source in errors: `env GITHUB_TOKEN`, `1Password`, `static`, `custom`. */
  readonly source: string
  readonly resolve: Effect.Effect<Redacted.Redacted<string>, SecretError, R>
}

/** Secrets by the environment variable name their value gets. */
export type Secrets<R = never> = Readonly<Record<string, Secret<R>>>

/** @since 0.1.0 @category models */
export interface OnePasswordOptions {
  /** `--account` for `op read`. */
  readonly account?: string | undefined
  /** The `op` executable (default `op`, looked up on PATH). */
  readonly command?: string | undefined
  /** Default 30 seconds. */
  readonly timeout?: Duration.Input | undefined
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/**
 * A source could not give its value; `description` says why and never holds the value.
 *
 * @since 0.1.0
 * @category errors
 */
export class SecretUnavailable extends Schema.TaggedError<SecretUnavailable>()("SecretUnavailable", {
  description: Schema.String
}) {
  override get message() {
    return this.description
  }
}

/**
 * A session's secret could not be resolved, so the session did not start.
 *
 * @since 0.1.0
 * @category errors
 */
export class SecretsInitFailed extends Schema.TaggedError<SecretsInitFailed>()("SecretsInitFailed", {
  name: Schema.String,
  description: Schema.String
}) {
  override get message() {
    return `Secret ${this.name} could not be resolved: ${this.description}`
  }
}

/** @since 0.1.0 @category errors */
export const Reason = Schema.Union([SecretUnavailable, SecretsInitFailed])
export type Reason = typeof Reason.Type

/**
 * The one error of the Secret seam: a source could not give its value (`SecretUnavailable`), or a
 * session's secret could not be resolved (`SecretsInitFailed`). Its `message` is the reason's
 * sentence, which never holds a value.
 *
 * @since 0.1.0
 * @category errors
 */
export class SecretError extends Schema.TaggedError<SecretError>()("SecretError", { reason: Reason }) {
  override get message() {
    return this.reason.message
  }
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

const unavailable = (description: string) => new SecretError({ reason: new SecretUnavailable({ description }) })

/**
 * The value of an environment variable (read through Effect's `ConfigProvider`, so tests can
 * provide their own).
 *
 * @since 0.1.0
 * @category constructors
 */
export const env = (name: string): Secret => ({
  _tag: "Secret",
  source: `env ${name}`,
  resolve: Effect.mapError(Config.Redacted(name), () => unavailable(`environment variable ${name} is not set`))
})

/**
 * A value given in code or configuration.
 *
 * @since 0.1.0
 * @category constructors
 */
const staticSecret = (value: string | Redacted.Redacted<string>): Secret => ({
  _tag: "Secret",
  source: "static",
  resolve: Effect.succeed(Redacted.isRedacted(value) ? value : Redacted.make(value))
})
export { staticSecret as static }

/**
 * Any effect that finds the value: a vault client, a cloud secret manager. Its failure's message
 * (never its value) becomes the reason.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <E extends { readonly message: string } | string, R = never>(
  resolve: Effect.Effect<string | Redacted.Redacted<string>, E, R>
): Secret<R> => ({
  _tag: "Secret",
  source: "custom",
  resolve: Effect.map(
    Effect.mapError(resolve, (error) => unavailable(typeof error === "string" ? error : error.message)),
    (value) => (Redacted.isRedacted(value) ? value : Redacted.make(value))
  )
})

/** The host variables `op` reads from its environment, besides the usual ones. */
const OP_VARIABLES = ["OP_*", "XDG_CONFIG_HOME"] as const

/**
 * A value from 1Password: runs `op read <ref> [--account <account>]` (no shell) and takes its
 * standard output, one trailing newline trimmed. The process gets the usual host variables and the
 * `OP_*` ones, runs in the user's home directory, and dies with the timeout or the session start.
 * The program's `ProcessRunner` runs it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const onePassword = (ref: string, options: OnePasswordOptions = {}): Secret<ProcessRunner.ProcessRunner> => {
  const command = options.command ?? "op"
  const timeoutMs = Duration.toMillis(Duration.fromInputUnsafe(options.timeout ?? "30 seconds"))
  const args = ["read", ref, ...(options.account === undefined ? [] : ["--account", options.account])]
  const described = ProcessRunner.make(command, args, { passHost: OP_VARIABLES, timeout: timeoutMs, stderr: "apart" })
  return {
    _tag: "Secret",
    source: "1Password",
    resolve: ProcessRunner.ProcessRunner.use((runner) => runner.run(described)).pipe(
      Effect.mapError((error) =>
        unavailable(
          error.reason._tag === "TimedOut"
            ? `${command} read ${ref} did not answer within ${timeoutMs}ms`
            : `${command} could not be run: ${error.message}`
        )
      ),
      Effect.flatMap((result) =>
        result.exitCode === 0
          ? Effect.succeed(Redacted.make(result.output.replace(/\r?\n$/, "")))
          : Effect.fail(unavailable(`${command} read ${ref} exited with code ${result.exitCode}: ${oneLine(result.stderr)}`))
      )
    )
  }
}

const oneLine = (text: string): string => {
  const line = text.trim().split("\n").at(-1) ?? ""
  return line === "" ? "(no message)" : line.slice(0, 300)
}

// ---------------------------------------------------------------------------------------------
// Guards
// ---------------------------------------------------------------------------------------------

const CREDENTIAL_NAME = /token|key|secret|pass|auth|cred|cookie/i

/**
 * Whether a value given without being declared a secret (a literal in an MCP server's `env`, a
 * custom header of a provider, a server or an `http` step) is a credential by its name: the name
 * holds token, key, secret, pass, auth, cred or cookie, in any case. `LOG_LEVEL=debug` is not.
 *
 * @since 0.1.0
 * @category guards
 */
export const isCredentialName = (name: string): boolean => CREDENTIAL_NAME.test(name)

const ORDINARY_VARIABLES: ReadonlySet<string> = new Set([
  "PATH", "HOME", "USER", "LOGNAME", "HOSTNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TMP", "TEMP"
])

/**
 * Whether a host variable holds nothing secret (PATH, HOME, USER, LANG…): passed on to a process,
 * any other host variable's value is treated as a credential.
 *
 * @since 0.1.0
 * @category guards
 */
export const isOrdinaryVariable = (name: string): boolean => ORDINARY_VARIABLES.has(name)

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

const initFailed = (name: string, description: string) =>
  new SecretError({ reason: new SecretsInitFailed({ name, description }) })

/** Names a process environment can carry, as POSIX shells accept them. */
const envName = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Resolves every secret concurrently; the first failure interrupts the others (their processes
 * die) and fails with a `SecretError` whose reason, `SecretsInitFailed`, names the secret.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolveAll = <R>(
  secrets: Secrets<R>
): Effect.Effect<Readonly<Record<string, Redacted.Redacted<string>>>, SecretError, R> =>
  Effect.gen(function*() {
    const entries = Object.entries(secrets)
    const invalid = entries.find(([name]) => !envName.test(name))
    if (invalid !== undefined) {
      return yield* initFailed(
        invalid[0],
        "the name must be a valid environment variable name (letters, digits and _, not starting with a digit)"
      )
    }
    const values = yield* Effect.forEach(
      entries,
      ([name, secret]) => Effect.mapError(secret.resolve, (error) => initFailed(name, error.reason.description)),
      { concurrency: "unbounded" }
    )
    return Object.fromEntries(entries.map(([name], i) => [name, values[i]!]))
  }).pipe(Effect.withSpan("Secret.resolveAll", { attributes: { names: Object.keys(secrets).join(",") } }))
