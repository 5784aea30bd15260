/**
 * "Did you mean …?" for unknown names (config fields, commands, step ids, preflight check ids,
 * imported symbols). The one wrapper around `fastest-levenshtein`.
 */
import { distance } from 'fastest-levenshtein';

/**
 * The known name closest to `input`, if it is close enough to be a likely typo: an edit distance of at
 * most a third of the longer name (at least 2 — a swapped pair of letters — at most 3, and less
 * than the shorter name's length), or one name a case-insensitive prefix of
 * the other. Ties go to the first in `known`.
 * @returns the suggestion, or undefined.
 */
export function closestName(input: string, known: Iterable<string>): string | undefined {
  const lower = input.toLowerCase();
  let best: { name: string; d: number } | undefined;
  for (const name of known) {
    if (name === input) continue;
    const d = distance(lower, name.toLowerCase());
    const limit = Math.min(3, Math.max(2, Math.floor(Math.max(input.length, name.length) / 3)));
    const prefix = lower.length >= 3 && name.toLowerCase().startsWith(lower);
    if (((d <= limit && d < Math.min(lower.length, name.length)) || prefix) && (!best || d < best.d)) best = { name, d };
  }
  return best?.name;
}

/** ` (did you mean "x"?)` when {@link closestName} finds one, else the empty string. */
export function didYouMean(input: string, known: Iterable<string>): string {
  const s = closestName(input, known);
  return s === undefined ? '' : ` (did you mean "${s}"?)`;
}
