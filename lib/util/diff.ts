/**
 * Line counts of a text change, for `plan`'s "update /etc/… (+3 −1 lines)". The one wrapper around
 * `diff` (jsdiff). Only counts leave this module, never the lines: a plan must not print key bytes.
 */
import { diffLines } from 'diff';

/** Lines added and removed going from `before` to `after` (Myers diff, as `diff -u` counts them). */
export function lineChanges(before: string, after: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const part of diffLines(before, after)) {
    if (part.added) added += part.count ?? 0;
    else if (part.removed) removed += part.count ?? 0;
  }
  return { added, removed };
}
