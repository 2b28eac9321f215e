/**
 * sessionFileName: the names of the hostile-id corpus's accepted ids (`HostileSessionIds` of
 * @condukt/testing) are ASCII, stay in their directory, fit a file name with any extension, and
 * stay apart when a file system folds case or normalizes them; the 0.1.0 name.
 */
import { assert, describe, it } from "@effect/vitest"
import { fileName, legacyName, MAX_NAME } from "../../src/internal/sessionFileName.ts"
import { HostileSessionIds } from "@condukt/testing"

describe("sessionFileName", () => {
  const names = HostileSessionIds.accepted.map(fileName)

  it("names each accepted id of the corpus apart, even folded to one case and normalized", () => {
    const folded = names.map((name) => name.toLowerCase().normalize("NFKC"))
    assert.strictEqual(new Set(folded).size, HostileSessionIds.accepted.length)
  })

  it("names are printable ASCII without a path separator, do not start with a dot, and fit 255 bytes with `.json.tmp`", () => {
    assert.deepStrictEqual(
      names.filter((name) => !/^[\x21-\x7e]+$/.test(name) || /[/\\]/.test(name) || name.startsWith(".") || `${name}.json.tmp`.length > 255),
      []
    )
    assert.deepStrictEqual(names.filter((name) => name.length > MAX_NAME), [])
  })

  it("the 0.1.0 name is the id when it was a plain name with capital letters, and none otherwise", () => {
    assert.deepStrictEqual(
      ["Ticket-42", "ticket-42", "a.B", ".Hidden", "a/B", "X".repeat(128), "X".repeat(129), "é"].map(legacyName),
      ["Ticket-42", undefined, "a.B", undefined, undefined, "X".repeat(128), undefined, undefined]
    )
  })
})
