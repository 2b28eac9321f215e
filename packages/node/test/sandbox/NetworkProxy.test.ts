/**
 * NetworkProxy.allows: which hosts an allow list lets a confined command reach (the proxy itself
 * is exercised through real commands in Confine.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import * as NetworkProxy from "../../src/sandbox/NetworkProxy.ts"

describe("NetworkProxy.allows", () => {
  it("matches a host on any port, host:port on that port, *.domain on its subdomains, without case", () => {
    const allow = ["registry.npmjs.org", "127.0.0.1:8080", "*.example.com", "[::1]:9000"]
    const cases: ReadonlyArray<readonly [string, number, boolean]> = [
      ["registry.npmjs.org", 443, true],
      ["Registry.NPMJS.org", 80, true],
      ["npmjs.org", 443, false],
      ["evil-registry.npmjs.org", 443, false],
      ["127.0.0.1", 8080, true],
      ["127.0.0.1", 8081, false],
      ["api.example.com", 443, true],
      ["a.b.example.com", 80, true],
      ["example.com", 443, false],
      ["notexample.com", 443, false],
      ["::1", 9000, true],
      ["::1", 9001, false]
    ]
    assert.deepStrictEqual(cases.map(([host, port]) => NetworkProxy.allows(allow, host, port)), cases.map(([, , expected]) => expected))
  })
})
