/**
 * commandLookups — the lookups a script's commands will make, answered before the script goes to
 * a worker (`WorkerPool`).
 *
 * just-bash finds a command by `exists` and `stat` of its stub in `/usr/bin` (or `/bin`): from a
 * worker, two crossings to the sandbox's thread and back for every command, four thread wake-ups
 * that each wait for a core on a loaded machine — most of an `echo`'s time there. The command names
 * a short script spells out are read from its syntax here, their stubs looked up on the sandbox's
 * own filesystem, and the answers go with the call; the worker treats them as its own lookups,
 * forgotten as soon as the call changes a file (`interpreterWorker.ts`). Names built at run time
 * (`$cmd`, `eval`) are looked up as before. A long script is not parsed here: that would be the
 * sandbox's thread doing the work the worker is for.
 */
import type { IFileSystem } from "just-bash"
import * as Protocol from "./workerProtocol.ts"

/** Scripts longer than this are not read here. */
const maxScriptChars = 4096
/** Command names answered at most, per call. */
const maxNames = 32
const commandName = /^[A-Za-z0-9_.+-]+$/
const directories = ["/usr/bin/", "/bin/"]

/** The literal command names of `script` (`parse` gives its syntax tree), in order, without repeats. */
const namesOf = (script: string, parse: (script: string) => unknown): ReadonlyArray<string> => {
  const names = new Set<string>()
  const visit = (node: unknown, depth: number): void => {
    if (names.size >= maxNames || depth > 200 || node === null || typeof node !== "object") return
    if (Array.isArray(node)) return node.forEach((child) => visit(child, depth + 1))
    const record = node as Record<string, unknown>
    if (record["type"] === "SimpleCommand") {
      const parts = (record["name"] as { readonly parts?: ReadonlyArray<{ readonly type: string; readonly value?: unknown }> } | null)?.parts
      const only = parts?.length === 1 ? parts[0] : undefined
      if (only?.type === "Literal" && typeof only.value === "string" && commandName.test(only.value)) names.add(only.value)
    }
    for (const value of Object.values(record)) visit(value, depth + 1)
  }
  try {
    visit(parse(script), 0)
  } catch {
    // A script that does not parse fails on the worker, with just-bash's message.
  }
  return [...names]
}

const settle = (key: string, answer: () => Promise<unknown>): Promise<Protocol.Known> =>
  answer().then((value) => ({ key, value }), (cause: unknown) => ({ key, failure: cause instanceof Error ? cause.message : String(cause) }))

/**
 * The answers to the lookups `script`'s commands will make on `fs`, or none for a long script.
 * `parse` is just-bash's (`Bash.transform`: its browser build exports no parser of its own).
 *
 * @since 0.2.0
 * @category constructors
 */
export const answer = (
  fs: IFileSystem,
  script: string,
  parse: (script: string) => unknown
): Promise<ReadonlyArray<Protocol.Known>> => {
  if (script.length > maxScriptChars) return Promise.resolve([])
  const names = namesOf(script, parse)
  if (names.length === 0) return Promise.resolve([])
  return Promise.all(names.flatMap((name) =>
    directories.flatMap((directory) => {
      const path = directory + name
      return [
        settle(Protocol.lookupKey("exists", path), () => fs.exists(path)),
        settle(Protocol.lookupKey("stat", path), () => fs.stat(path))
      ]
    })
  ))
}
