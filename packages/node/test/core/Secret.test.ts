/** Secret.onePassword against a real `op` (a fake one in a temporary directory), run by the Node process runner. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Secret from "@condukt/core/Secret"
import * as NodeProcessRunner from "../../src/processRunner/Node.ts"

/** A fake `op` in a fresh directory: it answers `op read <ref>` by the ref's last segment. */
const fakeOp = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "condukt-op-")))
    const op = join(dir, "op")
    writeFileSync(
      op,
      [
        "#!/bin/sh",
        `echo "$@" >> "${dir}/args"`,
        'case "$2" in',
        '  */ok) printf "value-from-op\\n" ;;',
        '  */noisy) echo "a notice on stderr" >&2; printf "quiet-value\\n" ;;',
        '  */missing) echo "[ERROR] 2026/11/23 \\"missing\\" isn\'t an item" >&2; exit 1 ;;',
        `  */slow) echo $$ > "${dir}/pid"; exec sleep 30 ;;`,
        "esac"
      ].join("\n")
    )
    chmodSync(op, 0o755)
    return { dir, op }
  }),
  ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ")

const values = (resolved: Readonly<Record<string, Redacted.Redacted<string>>>) =>
  Object.fromEntries(Object.entries(resolved).map(([k, v]) => [k, Redacted.value(v)]))

describe("Secret", () => {
  it.live("onePassword runs op read with the account, keeps stdout only and trims the newline", () =>
    Effect.gen(function*() {
      const { dir, op } = yield* fakeOp
      const resolved = yield* Secret.resolveAll({
        A: Secret.onePassword("op://Engineering/GitHub/ok", { command: op, account: "acme" }),
        B: Secret.onePassword("op://Engineering/GitHub/noisy", { command: op })
      })
      assert.deepStrictEqual(values(resolved), { A: "value-from-op", B: "quiet-value" })
      // Both run at once, so either may log first.
      assert.deepStrictEqual(readFileSync(join(dir, "args"), "utf8").split("\n").sort(), [
        "",
        "read op://Engineering/GitHub/noisy",
        "read op://Engineering/GitHub/ok --account acme"
      ])
    }).pipe(Effect.provide(NodeProcessRunner.layer)))

  it.live("onePassword finds op on PATH by default", () =>
    Effect.gen(function*() {
      const { dir } = yield* fakeOp
      const path = process.env.PATH
      yield* Effect.acquireRelease(
        Effect.sync(() => (process.env.PATH = `${dir}:${path}`)),
        () => Effect.sync(() => (process.env.PATH = path))
      )
      assert.deepStrictEqual(values(yield* Secret.resolveAll({ A: Secret.onePassword("op://v/i/ok") })), { A: "value-from-op" })
    }).pipe(Effect.provide(NodeProcessRunner.layer)))

  it.live("onePassword: a non-zero exit gives op's own last line", () =>
    Effect.gen(function*() {
      const { op } = yield* fakeOp
      const error = yield* Effect.flip(Secret.resolveAll({ A: Secret.onePassword("op://v/i/missing", { command: op }) }))
      assert.strictEqual(
        error.message,
        `Secret A could not be resolved: ${op} read op://v/i/missing exited with code 1: [ERROR] 2026/11/23 "missing" isn't an item`
      )
    }).pipe(Effect.provide(NodeProcessRunner.layer)))

  it.live("onePassword: a timeout kills op and names the secret", () =>
    Effect.gen(function*() {
      const { dir, op } = yield* fakeOp
      const error = yield* Effect.flip(Secret.resolveAll({ A: Secret.onePassword("op://v/i/slow", { command: op, timeout: "300 millis" }) }))
      assert.strictEqual(error.message, `Secret A could not be resolved: ${op} read op://v/i/slow did not answer within 300ms`)
      assert.isFalse(alive(Number(readFileSync(join(dir, "pid"), "utf8"))))
    }).pipe(Effect.provide(NodeProcessRunner.layer)))

  it.live("one failing secret stops the others: nothing they started keeps running", () =>
    Effect.gen(function*() {
      const { op } = yield* fakeOp
      const ref = `op://v/i-${process.pid}-${Date.now()}/slow`
      const error = yield* Effect.flip(Secret.resolveAll({
        SLOW: Secret.onePassword(ref, { command: op }),
        BROKEN: Secret.make(Effect.fail("not configured"))
      }))
      assert.strictEqual(error.message, "Secret BROKEN could not be resolved: not configured")
      const survivors = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).split("\n").filter((l) => l.includes(ref))
      assert.deepStrictEqual(survivors, [])
    }).pipe(Effect.provide(NodeProcessRunner.layer)))
})
