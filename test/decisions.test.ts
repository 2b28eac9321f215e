/**
 * docs/decisions/README.md indexes every decision record: a row per record, with the record's own
 * title and a status in one of three forms, naming records that exist.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const folder = path.resolve(import.meta.dirname, "../docs/decisions")

const records = fs.readdirSync(folder).filter((file) => /^\d{4}-.+\.md$/.test(file)).sort()

interface Row {
  readonly number: string
  readonly file: string
  readonly title: string
  readonly status: string
}

const rows: ReadonlyArray<Row> = [
  ...fs.readFileSync(path.join(folder, "README.md"), "utf8")
    .matchAll(/^\| \[(\d{4})\]\(([^)]+)\) \| (.+) \| (.+) \|$/gm)
].map(([, number, file, title, status]) => ({ number: number!, file: file!, title: title!, status: status! }))

/** A record's title: its first heading, without a leading `NNNN — `. */
const title = (file: string) =>
  fs.readFileSync(path.join(folder, file), "utf8").split("\n")[0]!.replace(/^# (\d{4} — )?/, "")

const STATUS = /^(accepted|(partly )?superseded by (\d{4})(, \d{4})*: .+|superseded by \d{4}(, \d{4})*)$/

describe("docs/decisions/README.md", () => {
  it("has a row for every decision record, in number order", () => {
    assert.deepStrictEqual(rows.map((row) => row.file), records)
  })

  it("names each record by its number and its own title", () => {
    assert.deepStrictEqual(
      rows.filter((row) => !row.file.startsWith(`${row.number}-`) || row.title !== title(row.file)),
      []
    )
  })

  it("gives each a status of accepted, superseded by NNNN or partly superseded by NNNN: what replaced it", () => {
    assert.deepStrictEqual(rows.filter((row) => !STATUS.test(row.status)), [])
    const named = rows.flatMap((row) => [...row.status.matchAll(/\b\d{4}\b/g)].map(([number]) => number))
    assert.deepStrictEqual(named.filter((number) => !rows.some((row) => row.number === number)), [])
  })

  it("a record superseded in part says so itself, naming what superseded it", () => {
    const unmarked = rows
      .filter((row) => row.status.includes("superseded"))
      .filter((row) => {
        const text = fs.readFileSync(path.join(folder, row.file), "utf8")
        const by = row.status.split(":")[0]!.match(/\d{4}/g) ?? []
        return !/superseded/i.test(text) || by.some((number) => !text.includes(number))
      })
    assert.deepStrictEqual(unmarked.map((row) => row.file), [])
  })
})
