/**
 * thrown — a thrown value as one line of text (never `[object Object]`).
 *
 * Its own module, free of `@condukt/core`, so what runs in an interpreter's worker thread
 * (`interpreterWorker.ts`, `rm.ts`) loads just-bash and nothing of the runtime: a worker that
 * imported the core took ~0.85 s more to start.
 */

/**
 * The message of an `Error`, or the value as a string.
 *
 * @since 0.1.0
 * @category constructors
 */
export const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))
