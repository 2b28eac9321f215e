import { assert, describe, it } from "@effect/vitest"
import { ScriptedProcesses } from "@condukt/testing"
import { ConfigProvider, Duration, Effect, Redacted } from "effect"
import * as ProcessRunner from "../src/ProcessRunner.ts"
import * as Secret from "../src/Secret.ts"

const values = (resolved: Readonly<Record<string, Redacted.Redacted<string>>>) =>
  Object.fromEntries(Object.entries(resolved).map(([k, v]) => [k, Redacted.value(v)]))

describe("Secret", () => {
  it.effect("env reads the variable through the ConfigProvider; a missing one names it", () =>
    Effect.gen(function*() {
      const resolved = yield* Secret.resolveAll({ GH_TOKEN: Secret.env("GITHUB_TOKEN"), LITERAL: Secret.static("plain") })
      assert.deepStrictEqual(values(resolved), { GH_TOKEN: "ghp_from_env", LITERAL: "plain" })
      const error = yield* Effect.flip(Secret.resolveAll({ NPM: Secret.env("NPM_TOKEN") }))
      assert.strictEqual(error.message, "Secret NPM could not be resolved: environment variable NPM_TOKEN is not set")
    }).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ GITHUB_TOKEN: "ghp_from_env" })))))

  it.effect("make runs any effect; its failure's message is the reason, never a value", () =>
    Effect.gen(function*() {
      const vault = Secret.make(Effect.succeed(Redacted.make("from-vault")))
      assert.deepStrictEqual(values(yield* Secret.resolveAll({ VAULT: vault })), { VAULT: "from-vault" })
      const down = Secret.make(Effect.fail("vault is sealed"))
      assert.strictEqual(
        (yield* Effect.flip(Secret.resolveAll({ VAULT: down }))).message,
        "Secret VAULT could not be resolved: vault is sealed"
      )
    }))

  it.effect("names must be valid environment variable names", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Secret.resolveAll({ "GH-TOKEN": Secret.static("x"), "1ST": Secret.static("y") }))
      assert.strictEqual(
        error.message,
        "Secret GH-TOKEN could not be resolved: the name must be a valid environment variable name (letters, digits and _, not starting with a digit)"
      )
    }))

  it("a value given without being declared is a credential when its name says so", () => {
    assert.deepStrictEqual(
      ["API_TOKEN", "GH_KEY", "DB_PASSWORD", "client_secret", "Authorization", "AWS_CREDENTIALS", "Cookie", "LOG_LEVEL", "PORT"]
        .map(Secret.isCredentialName),
      [true, true, true, true, true, true, true, false, false]
    )
  })

  it("host variables every process has are ordinary; any other passed on is not", () => {
    assert.deepStrictEqual(["PATH", "HOME", "LANG", "TMPDIR", "GITHUB_TOKEN", "DATABASE_URL"].map(Secret.isOrdinaryVariable), [
      true,
      true,
      true,
      true,
      false,
      false
    ])
  })

  describe("onePassword on a scripted ProcessRunner (no process)", () => {
    const answers = ScriptedProcesses.layer({
      run: (command) =>
        command.args[1] === "op://v/i/ok"
          ? { output: "value-from-op\n", stderr: "a notice\n" }
          : command.args[1] === "op://v/i/locked"
          ? { exitCode: 1, stderr: "[ERROR] 2026/11/25 account is not signed in\n" }
          : command.args[1] === "op://v/i/slow"
          ? new ProcessRunner.TimedOut({ timeoutMs: 2000, output: "", truncated: false })
          : new ProcessRunner.SpawnFailed({ description: "command not found" })
    })

    it.effect("runs op read with the account, in the home directory, with the OP_ variables, stderr apart", () =>
      Effect.gen(function*() {
        const resolved = yield* Secret.resolveAll({ A: Secret.onePassword("op://v/i/ok", { account: "acme", timeout: "2 seconds" }) })
        assert.deepStrictEqual(values(resolved), { A: "value-from-op" })
        assert.deepStrictEqual(yield* ScriptedProcesses.commands, [
          ProcessRunner.make("op", ["read", "op://v/i/ok", "--account", "acme"], {
            passHost: ["OP_*", "XDG_CONFIG_HOME"],
            timeout: Duration.seconds(2),
            stderr: "apart"
          })
        ])
        assert.strictEqual((yield* ScriptedProcesses.commands)[0]!.cwd, undefined)
      }).pipe(Effect.provide(answers)))

    it.effect("a non-zero exit, a timeout and a missing op each name the secret and why, never a value", () =>
      Effect.gen(function*() {
        const reason = (ref: string, command?: string) =>
          Effect.map(Effect.flip(Secret.resolveAll({ A: Secret.onePassword(ref, { command, timeout: "2 seconds" }) })), (e) => e.message)
        assert.deepStrictEqual([
          yield* reason("op://v/i/locked"),
          yield* reason("op://v/i/slow"),
          yield* reason("op://v/i/other", "/opt/op")
        ], [
          "Secret A could not be resolved: op read op://v/i/locked exited with code 1: [ERROR] 2026/11/25 account is not signed in",
          "Secret A could not be resolved: op read op://v/i/slow did not answer within 2000ms",
          "Secret A could not be resolved: /opt/op could not be run: Cannot run /opt/op: command not found"
        ])
      }).pipe(Effect.provide(answers)))
  })
})
