/**
 * The scores of a kube-bench run from its `--json` output: PASS / FAIL / WARN / INFO per section, per
 * host, per cluster, the FAIL check ids, and the side-by-side table `npm run cis` prints. Pure.
 *
 * kube-bench's JSON (v0.15.6, check/controls.go): `{ Controls: [{ id, text, node_type, tests: [{ section,
 * desc, pass, fail, warn, info, results: [{ test_number, test_desc, status, scored, … }] }] }], Totals }`.
 * Counts are taken from the results' `status`, not from kube-bench's own counters, so a check is counted
 * once whatever kube-bench sums.
 */

/** A check's outcome as kube-bench reports it. */
export type Status = 'PASS' | 'FAIL' | 'WARN' | 'INFO';
const STATUSES: readonly Status[] = ['PASS', 'FAIL', 'WARN', 'INFO'];

/** Counts of each status. */
export interface Counts {
  pass: number;
  fail: number;
  warn: number;
  info: number;
}

/** One section (kube-bench's group, e.g. `1.2 API Server`) of one target. */
export interface Section extends Counts {
  /** `1.2` */
  id: string;
  /** `API Server` */
  text: string;
  /** kube-bench's target (node_type): master, controlplane, etcd, node, policies. */
  target: string;
}

/** The scores of one kube-bench run on one host. */
export interface HostScore {
  /** What the host is in its cluster, e.g. `control plane`, `worker`. */
  role: string;
  sections: Section[];
  totals: Counts;
  /** Failed checks: id and text, in kube-bench's order. */
  fails: { id: string; text: string }[];
}

/** The scores of a cluster: its hosts' runs and their sum. */
export interface ClusterScore {
  /** `kubeception`, `kubeadm`. */
  name: string;
  hosts: HostScore[];
  totals: Counts;
}

const zero = (): Counts => ({ pass: 0, fail: 0, warn: 0, info: 0 });
const add = (a: Counts, b: Counts): Counts => ({ pass: a.pass + b.pass, fail: a.fail + b.fail, warn: a.warn + b.warn, info: a.info + b.info });
const key = (s: Status) => s.toLowerCase() as keyof Counts;

interface RawResult {
  test_number?: unknown;
  test_desc?: unknown;
  status?: unknown;
}
interface RawGroup {
  section?: unknown;
  desc?: unknown;
  results?: RawResult[] | null;
}
interface RawControls {
  node_type?: unknown;
  tests?: RawGroup[] | null;
}

/**
 * Scores one run from kube-bench's `--json` text.
 * @param source names the text in errors (a file path).
 * @throws Error naming `source` if the text is not JSON, has no `Controls` list, or a check has an
 *   unknown status.
 */
export function scoreRun(json: string, role: string, source: string): HostScore {
  let doc: { Controls?: RawControls[] | null };
  try {
    doc = JSON.parse(json) as typeof doc;
  } catch (e) {
    throw new Error(`${source}: not JSON (${(e as Error).message}): is it kube-bench's --json output?`, { cause: e });
  }
  if (!doc || !Array.isArray(doc.Controls)) throw new Error(`${source}: no "Controls" list: is it kube-bench's --json output (without --nototals)?`);
  const sections: Section[] = [];
  const fails: HostScore['fails'] = [];
  let totals = zero();
  for (const controls of doc.Controls) {
    for (const group of controls.tests ?? []) {
      const section: Section = { id: String(group.section ?? '?'), text: String(group.desc ?? ''), target: String(controls.node_type ?? '?'), ...zero() };
      for (const r of group.results ?? []) {
        const status = r.status as Status;
        if (!STATUSES.includes(status)) throw new Error(`${source}: check ${String(r.test_number)} has status ${JSON.stringify(r.status)} (want one of ${STATUSES.join(', ')})`);
        section[key(status)]++;
        if (status === 'FAIL') fails.push({ id: String(r.test_number), text: String(r.test_desc ?? '') });
      }
      totals = add(totals, section);
      sections.push(section);
    }
  }
  return { role, sections, totals, fails };
}

/** A cluster's score: the sum of its hosts' runs. */
export function scoreCluster(name: string, hosts: HostScore[]): ClusterScore {
  return { name, hosts, totals: hosts.reduce((t, h) => add(t, h.totals), zero()) };
}

const cells = (c: Counts | undefined) => (c ? [c.pass, c.fail, c.warn, c.info].map((n) => String(n).padStart(5)).join('') : `${'-'.padStart(5)}`.repeat(4));

/**
 * The side-by-side table of clusters (same roles, e.g. control plane and worker, in each), a row per
 * host and section, the totals, then each cluster's FAIL ids.
 * @param title the first line (benchmark, versions, date).
 */
export function formatScores(title: string, clusters: readonly ClusterScore[]): string {
  const width = 56;
  const head = clusters.map((c) => c.name.padStart(20)).join('');
  const lines = [title, '', `${''.padEnd(width)}${head}`, `${'section'.padEnd(width)}${clusters.map(() => ' PASS FAIL WARN INFO').join('')}`];
  const roles = [...new Set(clusters.flatMap((c) => c.hosts.map((h) => h.role)))];
  for (const role of roles) {
    const hosts = clusters.map((c) => c.hosts.find((h) => h.role === role));
    lines.push(`${role} host`);
    const ids = [...new Map(hosts.flatMap((h) => h?.sections ?? []).map((s) => [`${s.target} ${s.id}`, s])).values()];
    for (const s of ids) {
      const label = `  ${s.id} ${s.text}`.slice(0, width - 1).padEnd(width);
      lines.push(`${label}${hosts.map((h) => cells(h?.sections.find((x) => x.target === s.target && x.id === s.id))).join('')}`);
    }
    lines.push(`${`  ${role} total`.padEnd(width)}${hosts.map((h) => cells(h?.totals)).join('')}`);
  }
  lines.push(`${'cluster total'.padEnd(width)}${clusters.map((c) => cells(c.totals)).join('')}`);
  for (const c of clusters) {
    lines.push('', `FAIL on ${c.name} (${c.totals.fail}):`);
    for (const h of c.hosts) if (h.fails.length) lines.push(`  ${h.role}: ${h.fails.map((f) => f.id).join(' ')}`);
  }
  return `${lines.join('\n')}\n`;
}
