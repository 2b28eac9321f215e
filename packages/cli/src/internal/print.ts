/**
 * print — where the CLI prints and how it stops: a `Printer` (stdout and stderr, each line
 * redacted first), `Exit` (the process should exit with a code, its message already printed), and
 * the report of an unexpected failure. Loaded with the command tree, so it needs none of the
 * packages a command loads on its own (a `Redactor` is only its type here).
 */
import type { Redactor } from "@condukt/core"
// The modules, not the indexes of `effect` and `effect/cli`, which load every module of theirs.
import * as Cause from "effect/Cause"
import * as CliError from "effect/cli/CliError"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * The process should exit with `code` (the message is already printed).
 *
 * @since 0.1.0
 * @category errors
 */
export class Exit extends Schema.TaggedError<Exit>()("Exit", { code: Schema.Int }) {}

/** Where the CLI prints: stdout and stderr, each line redacted first. */
export interface Printer {
  readonly out: (text: string) => Effect.Effect<void>
  readonly err: (text: string) => Effect.Effect<void>
}

export const printer = (redactor: Redactor.Service): Printer => ({
  out: (text) => Console.log(redactor.redact(text)),
  err: (text) => Console.error(redactor.redact(text))
})

/** Before a workflow is loaded no secret is known (`Redactor.none`, without loading the package for it). */
export const plain = printer({ redact: (text) => text })

export const fail = (print: Printer, code: number, message: string) => Effect.andThen(print.err(message), Effect.fail(new Exit({ code })))

/** What an unexpected failure prints: its message (the first error's), and with `verbose` the whole cause, stacks included. */
const unexpected = (cause: Cause.Cause<unknown>, verbose: boolean): string => {
  const errors = Cause.prettyErrors(cause)
  const message = errors.map((error) => error.message === "" ? error.name : error.message).join("; ")
  return verbose
    ? `Unexpected error: ${message}\n${Cause.pretty(cause)}`
    : `Unexpected error: ${message} (run again with --verbose for its cause and stack)`
}

/**
 * `effect` with every unexpected failure printed (redacted by `print`) and turned into exit 1.
 * An `Exit` (its message already printed), a usage error (printed by the parser) and an
 * interruption (Ctrl-C) pass through.
 */
export const reportUnexpected = (print: Printer, verbose: boolean) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exit, R> =>
  Effect.catchCause(effect, (cause) => {
    // Interrupted (Ctrl-C): interrupted still, so the teardown exits 130.
    if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
    const error = Cause.findErrorOption(cause)
    if (Option.isSome(error) && error.value instanceof Exit) return Effect.fail(error.value)
    if (Option.isSome(error) && CliError.isCliError(error.value)) return Effect.fail(new Exit({ code: 2 }))
    return fail(print, 1, unexpected(cause, verbose))
  })
