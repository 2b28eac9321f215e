/**
 * announce — the page's one live region: a view says what changed (a page loaded, an answer
 * given) and screen readers read it out, politely. App renders the region; any view may call it.
 */
import { useEffect, useState } from "preact/hooks"

let current = ""
const listeners = new Set<(text: string) => void>()

/** Tells screen readers `text` (bounded: it is read out whole). */
export const announce = (text: string): void => {
  current = text.slice(0, 300)
  for (const listener of listeners) listener(current)
}

/** The latest announcement, for the region that shows it. */
export const useAnnouncement = (): string => {
  const [text, setText] = useState(current)
  useEffect(() => {
    listeners.add(setText)
    return () => void listeners.delete(setText)
  }, [])
  return text
}
