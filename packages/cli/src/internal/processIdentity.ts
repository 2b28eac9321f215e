/**
 * processIdentity — who this CLI process is, as a durable run's lease names it to another process
 * refused the same run: its pid and its host's name (`Durable.Options.holder`, ADR 0081). The
 * one place the CLI asks Node itself.
 */
import * as os from "node:os"

/** This process's pid and its host's name. */
export const current = (): { readonly pid: number; readonly host: string } => ({ pid: process.pid, host: os.hostname() })
