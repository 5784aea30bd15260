/** Text helpers for messages. */

/**
 * The first line of `text`, whole when it fits in `max` characters; else cut at the last space before
 * `max` and marked with `…` — never mid-word or mid-quote such as `Head "http://1`.
 */
export function firstLine(text: string, max = 600): string {
  const line = (text.split('\n')[0] ?? '').trim();
  if (line.length <= max) return line;
  const cut = line.lastIndexOf(' ', max);
  return `${line.slice(0, cut > max / 2 ? cut : max)} …`;
}
