/**
 * Picks the line of a unit's journal that says why it failed, so an error shows
 * "open /var/lib/etcd/default/member/snap/db: permission denied" rather than 16 lines of start-up noise.
 */

/** Patterns of cause lines, most specific first. */
const CAUSES: readonly RegExp[] = [
  /permission denied|operation not permitted/i,
  /no such file or directory|not found/i,
  /address already in use|bind:/i,
  /\b(fatal|panic|critical)\b|"level":"(fatal|panic)"/i,
  /\b(error|failed|cannot|unable)\b|"level":"error"/i,
];

/** Lines systemd itself writes about the unit (they say that it failed, not why). */
const SYSTEMD_NOISE = /^(Started|Starting|Stopped|Stopping|Failed to start|.*: (Main process exited|Failed with result|Scheduled restart job|Consumed)).*/;

/**
 * The most telling line of `logs` (journal lines, oldest first): the last line matching the most
 * specific cause pattern, ignoring systemd's own status lines; undefined if none matches.
 */
export function causeLine(logs: readonly string[]): string | undefined {
  const own = logs.filter((l) => !SYSTEMD_NOISE.test(l.trim()));
  for (const re of CAUSES) {
    const hit = own.filter((l) => re.test(l)).pop();
    if (hit) return readable(hit.trim()).slice(0, 400);
  }
  return undefined;
}

/** A structured (JSON, e.g. etcd's zap) log line as `msg: error`, without its stack trace. */
function readable(line: string): string {
  if (!line.startsWith('{')) return line;
  try {
    const o = JSON.parse(line) as Record<string, unknown>;
    const parts = [o.msg, o.path, o.error].filter((v) => typeof v === 'string' && v);
    return parts.length ? parts.join(': ') : line;
  } catch {
    return line;
  }
}
