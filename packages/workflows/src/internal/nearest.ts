/**
 * nearest — the name a typo most likely meant: of `names`, the one fewest single-character edits
 * away from `name` (a swap of two neighbours counting as one: optimal string alignment), when it
 * is close enough to be a typo (at most a third of the longer name, and at least one edit
 * allowed); ties go to the first in sorted order. For "did you mean" in errors naming a step or
 * an input that does not exist. Names are ids (a page of HCL), and a name longer than `MAX` is
 * compared with none.
 */

/** The longest name compared: the distance costs the product of the two lengths. */
const MAX = 256

const distance = (a: string, b: string): number => {
  // Three rows: a transposition (`nmae` for `name`) looks two back.
  let before: Array<number> = []
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1)
      current[j] = d
    }
    before = previous
    previous = current
  }
  return previous[b.length]!
}

/** The name of `names` nearest `name`, if one is near enough to be what was meant. */
export const nearest = (name: string, names: Iterable<string>): string | undefined => {
  if (name.length > MAX) return undefined
  let best: { readonly name: string; readonly distance: number } | undefined
  for (const candidate of [...names].sort()) {
    if (candidate === name || candidate.length > MAX) continue
    const d = distance(name, candidate)
    const allowed = Math.max(1, Math.floor(Math.max(name.length, candidate.length) / 3))
    if (d <= allowed && (best === undefined || d < best.distance)) best = { name: candidate, distance: d }
  }
  return best?.name
}

/** `; did you mean "deploy"?` when a name is near, else nothing. */
export const didYouMean = (name: string, names: Iterable<string>): string => {
  const near = nearest(name, names)
  return near === undefined ? "" : `; did you mean ${JSON.stringify(near)}?`
}
