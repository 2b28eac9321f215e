/** Shared by the workflow tests: whether a process still exists. */

/** True while `pid` names a live process (signal 0 checks without signalling). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
