/**
 * corruptJournal — the one error a durable run's journal gets when what it holds cannot be read:
 * a row of the runs table (`Durable`) or a record of the engine (`durableEngine`) that is not
 * what was written there. It is not the user's workflow or inputs that changed (`WorkflowChanged`,
 * `InputsChanged`), nor a database out of reach (`StoreUnavailable`): it names the journal, the
 * run and the record, and says what is left to do, since no retry reads the record back.
 */
import { DurableFailed } from "../WorkflowError.ts"

/**
 * `JournalCorrupted`: `what` says which record cannot be read and why.
 */
export const corrupted = (runId: string, location: string, what: string, cause?: unknown): DurableFailed =>
  new DurableFailed({
    reason: "JournalCorrupted",
    runId,
    location,
    description: `the journal of run ${runId} in ${location} is corrupted: ${what}; ` +
      `this run cannot be resumed: start a new run (the other runs in ${location} are not affected)`,
    cause
  })
