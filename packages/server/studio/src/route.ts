/**
 * route — the page's place as a hash path (`#/sessions/<id>`, `#/approvals/audit`, …): links and
 * the back button work, and a reload opens the same view. Each segment is URI-decoded and bounded.
 */
import { useEffect, useState } from "preact/hooks"

const MAX_SEGMENTS = 8
const MAX_SEGMENT_CHARS = 512

/** The hash's path as segments: `#/workflows/build/r1` is `["workflows", "build", "r1"]`. */
export const parse = (hash: string): string[] =>
  hash.replace(/^#\/?/, "").split("/").filter((part) => part !== "").slice(0, MAX_SEGMENTS).map((part) => {
    try {
      return decodeURIComponent(part).slice(0, MAX_SEGMENT_CHARS)
    } catch {
      return part.slice(0, MAX_SEGMENT_CHARS)
    }
  })

/** A hash link to `segments`, each encoded. */
export const href = (...segments: ReadonlyArray<string>): string => `#/${segments.map(encodeURIComponent).join("/")}`

/** The current route, following the hash as it changes. */
export const useRoute = (): string[] => {
  const [route, setRoute] = useState(() => parse(location.hash))
  useEffect(() => {
    const update = () => setRoute(parse(location.hash))
    addEventListener("hashchange", update)
    return () => removeEventListener("hashchange", update)
  }, [])
  return route
}
