/**
 * conformanceMount — the mount part of the sandbox conformance suite.
 */
import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { hostDirectory, outcome, ran, type Suite, under } from "./conformance.ts"

export const register = ({ capabilities, notSupported, test }: Suite): void => {
  describe("mount", () => {
    if (!capabilities.mount) return notSupported("mount", (sandbox) => sandbox.mount("/", "mnt", "read-only"))

    test("mounts a host directory read-only: its files read through the sandbox, writes refused", (sandbox) =>
      Effect.gen(function*() {
        const host = yield* hostDirectory({ "hello.txt": "from the host\n" })
        yield* sandbox.mount(host, under(sandbox.cwd, "mounted"), "read-only")
        assert.strictEqual(yield* sandbox.read("mounted/hello.txt"), "from the host\n")
        assert.deepStrictEqual(yield* sandbox.exec("cat mounted/hello.txt"), ran("from the host\n"))
        assert.deepStrictEqual(yield* outcome(sandbox.writeFile("mounted/new.txt", "x")), {
          reason: "ReadOnly",
          message: "mounted/new.txt is on a read-only filesystem"
        })
        assert.deepStrictEqual(fs.readdirSync(host), ["hello.txt"])
      }))
  })
}
