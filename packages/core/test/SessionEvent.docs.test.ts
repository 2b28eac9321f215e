/**
 * docs/sessions.md's Events table against SessionEvent's schemas: every event has a row, and the
 * row names every field the event carries beyond the base ones; docs/sandbox.md points at it.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import * as SessionEvent from "../src/SessionEvent.ts"

const doc = (name: string) => readFileSync(new URL(`../../../docs/${name}`, import.meta.url), "utf8")

const BASE = new Set(["_tag", "sessionId", "runId", "seq", "agentPath", "parentCallId"])

/** The Events table's rows: the tags of the first cell, the text of the others. */
const rows = () => {
  const section = doc("sessions.md").split("\n## Events\n")[1]?.split("\n## ")[0] ?? ""
  return section.split("\n").filter((line) => line.startsWith("| `")).map((line) => {
    const [names = "", ...rest] = line.split(" | ")
    return { tags: [...names.matchAll(/`(\w+)`/g)].map((m) => m[1]!), text: rest.join(" | ") }
  })
}

describe("SessionEvent docs", () => {
  it("docs/sessions.md's Events table has a row per event naming every field it carries", () => {
    const table = rows()
    const missing = SessionEvent.SessionEvent.members.flatMap((member) => {
      const tag = String((member.fields._tag.ast as { readonly literal?: unknown }).literal)
      const row = table.find((r) => r.tags.includes(tag))
      if (row === undefined) return [`${tag}: no row`]
      return Object.keys(member.fields).filter((field) => !BASE.has(field) && !row.text.includes(`\`${field}`)).map((field) => `${tag}.${field}`)
    })
    assert.deepStrictEqual(missing, [])
  })

  it("docs/sandbox.md links to that table", () => {
    assert.isTrue(doc("sandbox.md").includes("(sessions.md#events)"))
  })
})
