/**
 * poll — a read the page repeats: `load` now, and again `everyMs` after each answer or failure,
 * until the stop it returns is called (an effect's cleanup). An answer that comes after the stop is
 * dropped, so a view that left, or asks with other filters now, never shows a stale one.
 */
export const poll = <A>(load: () => Promise<A>, onAnswer: (answer: A) => void, onFailure: (cause: unknown) => void, everyMs: number): () => void => {
  let live = true
  let timer: ReturnType<typeof setTimeout> | undefined
  const next = () => {
    load().then(
      (answer) => live && onAnswer(answer),
      (cause: unknown) => live && onFailure(cause)
    ).finally(() => {
      if (live) timer = setTimeout(next, everyMs)
    })
  }
  next()
  return () => {
    live = false
    clearTimeout(timer)
  }
}
