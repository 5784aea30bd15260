/**
 * A /readyz prober inside a bed host: a new TLS connection every 100 ms (1 s timeout) until stopped,
 * each answer recorded with its start time; `stop()` returns the longest stretch without a 200.
 * Used where a test or benchmark claims how long the API was unavailable.
 */
import type { Host } from '../bed/bed.ts';

const SCRIPT = `const https = require('https'), fs = require('fs');
const ca = fs.readFileSync(process.argv[2]), stop = process.argv[3], out = [];
const iv = setInterval(() => {
  if (fs.existsSync(stop)) { clearInterval(iv); setTimeout(() => { process.stdout.write(JSON.stringify(out)); process.exit(0); }, 1500); return; }
  const t = Date.now();
  const req = https.get(process.argv[1], { ca, agent: false, timeout: 1000 }, (r) => {
    if (r.statusCode === 200) { r.resume(); out.push([t, 200]); return; }
    let body = ''; r.setEncoding('utf8'); r.on('data', (d) => { body += d; });
    r.on('end', () => out.push([t, r.statusCode, body.split('\\n').filter((l) => l.startsWith('[-]')).map((l) => l.slice(3).split(' ')[0]).join(',')]));
  });
  req.on('timeout', () => req.destroy()); req.on('error', () => out.push([t, 0]));
}, 100);`;

/** What the probes saw: the longest gap (first failed probe to the next 200) in ms, failures, total. */
export interface Gap {
  gapMs: number;
  failed: number;
  total: number;
  /** When the longest gap began (ISO time, the host's clock), and the answers seen in it (`status×count`, 0 = none). */
  gapStart?: string;
  gapAnswers?: string;
  /** The failed `/readyz` checks the non-200 answers in the longest gap named (`check×count`), when any did. */
  gapChecks?: string;
  /** Every probe: `[startMs, status]` (0 = no answer), from `startProber`. */
  samples?: [number, number][];
}

/**
 * The longest stretch without a 200 in `samples` (`[startMs, status, failedChecks?]`, status 0 = no
 * answer; failedChecks: the comma-separated `[-]` check names of a non-200 `/readyz` body).
 */
export function longestGap(samples: [number, number, string?][]): Gap {
  const s = [...samples].sort((a, b) => a[0] - b[0]);
  let gap = 0;
  let at: [number, number] | undefined; // the longest gap's [start, end]
  let start: number | undefined;
  const close = (end: number) => {
    if (start !== undefined && end - start > gap) [gap, at] = [end - start, [start, end]];
    start = undefined;
  };
  for (const [t, code] of s) {
    if (code !== 200) start ??= t;
    else close(t);
  }
  if (start !== undefined) close(s.at(-1)![0]);
  const result: Gap = { gapMs: gap, failed: s.filter(([, c]) => c !== 200).length, total: s.length };
  if (at) {
    const counts = new Map<number, number>();
    for (const [t, code] of s) if (t >= at[0] && t < at[1]) counts.set(code, (counts.get(code) ?? 0) + 1);
    result.gapStart = new Date(at[0]).toISOString();
    result.gapAnswers = [...counts].map(([c, n]) => `${c}×${n}`).join(' ');
    const checks = new Map<string, number>();
    for (const [t, , failed] of s) if (t >= at[0] && t < at[1] && failed) for (const c of failed.split(',')) checks.set(c, (checks.get(c) ?? 0) + 1);
    if (checks.size) result.gapChecks = [...checks].map(([c, n]) => `${c}×${n}`).join(' ');
  }
  return result;
}

/**
 * Starts the prober in `host` against `url` (verified with the CA file `caPath` inside the host).
 * @returns `stop()`, which ends it and returns the gap.
 */
export async function startProber(host: Host, url: string, caPath = '/etc/kubernetes/pki/ca.crt'): Promise<{ stop: () => Promise<Gap> }> {
  const flag = `/tmp/stop-prober-${Date.now()}`;
  const run = host.exec(['node', '-e', SCRIPT, url, caPath, flag], { timeoutMs: 3_600_000 });
  return {
    stop: async () => {
      await host.execOk(['touch', flag]);
      const r = await run;
      await host.exec(['rm', '-f', flag]);
      if (r.code !== 0) throw new Error(`prober in ${host.name} exited ${r.code}: ${r.stderr.slice(-500)}`);
      const samples = JSON.parse(r.stdout) as [number, number, string?][];
      return { ...longestGap(samples), samples: samples.map(([t, c]) => [t, c]) };
    },
  };
}

const TOKEN_SCRIPT = `const https = require('https'), fs = require('fs');
const [url, caPath, stop, ...tokenFiles] = process.argv.slice(1);
const ca = fs.readFileSync(caPath), tokens = tokenFiles.map((f) => fs.readFileSync(f, 'utf8').trim()), out = tokens.map(() => []);
const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
const iv = setInterval(() => {
  if (fs.existsSync(stop)) { clearInterval(iv); setTimeout(() => { process.stdout.write(JSON.stringify(out)); process.exit(0); }, 1500); return; }
  tokens.forEach((token, i) => {
    const t = Date.now();
    const req = https.request(url, { method: 'POST', ca, agent: false, timeout: 1000, headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' } }, (r) => { r.resume(); out[i].push([t, r.statusCode]); });
    req.on('timeout', () => req.destroy()); req.on('error', () => out[i].push([t, 0])); req.end(body);
  });
}, 200);`;

/** What a token prober saw per token: the answers by status (0 = no answer) and the longest gap without a 201. */
export interface TokenProbes {
  statuses: Record<string, number>;
  gap: Gap;
  /** When each 401 (the token rejected) was asked for, ms since the epoch. */
  rejectedAt: number[];
}

/**
 * Starts a token prober in `host`: every 200 ms, for each token file (read once, at the start), a new
 * TLS connection POSTs a SelfSubjectReview to `url` (`…/apis/authentication.k8s.io/v1/selfsubjectreviews`)
 * with that token; 201 = the token authenticated, 401 = rejected. Tokens stay in the host.
 * @returns `stop()`, which ends it and returns what each token saw, in the order of `tokenFiles`.
 */
export async function startTokenProber(host: Host, url: string, tokenFiles: string[], caPath = '/etc/kubernetes/pki/ca.crt'): Promise<{ stop: () => Promise<TokenProbes[]> }> {
  const flag = `/tmp/stop-token-prober-${Date.now()}`;
  const run = host.exec(['node', '-e', TOKEN_SCRIPT, url, caPath, flag, ...tokenFiles], { timeoutMs: 3_600_000 });
  return {
    stop: async () => {
      await host.execOk(['touch', flag]);
      const r = await run;
      await host.exec(['rm', '-f', flag]);
      if (r.code !== 0) throw new Error(`token prober in ${host.name} exited ${r.code}: ${r.stderr.slice(-500)}`);
      return (JSON.parse(r.stdout) as [number, number][][]).map((samples) => {
        const statuses: Record<string, number> = {};
        for (const [, code] of samples) statuses[code] = (statuses[code] ?? 0) + 1;
        return { statuses, gap: longestGap(samples.map(([t, c]) => [t, c === 201 ? 200 : c])), rejectedAt: samples.filter(([, c]) => c === 401).map(([t]) => t) };
      });
    },
  };
}
