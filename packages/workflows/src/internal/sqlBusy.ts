/**
 * sqlBusy — how a durable run's own statements wait out a database another process holds (SQLite
 * locks the whole file while one process writes): tried again 100 times, 20 ms apart, on the
 * Effect clock. Other failures are not waited out.
 */
import { Schedule } from "effect"
import type { SqlError } from "effect/sql"

/** The retry policy: `Effect.retry(statement, BUSY)`. */
export const BUSY = {
  while: (error: SqlError.SqlError) => error.reason._tag === "LockTimeoutError",
  times: 100,
  schedule: Schedule.spaced("20 millis")
}
