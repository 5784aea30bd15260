/**
 * The scale bench's figures (bench/scale.ts): from each side's driver result (bench/scale-sim.ts)
 * and the control plane's measurements, the table printed with ratios kubeception / kubeadm.
 */
import type { SimResult } from './scale-sim.ts';
import type { Side } from './scale-node.ts';

/** Resident memory of the control plane's processes, MiB (all processes of that name summed). */
export interface Rss {
  apiserverMiB: number;
  etcdMiB: number;
  /** How many processes each sum holds. */
  apiservers: number;
  etcds: number;
}

/** Wall time (ms) and exit code of a read-only command on the control plane; undefined: the side has none. */
export type Timed = { ms: number; code: number; tail?: string } | undefined;

export interface SideResult {
  side: Side;
  sim: SimResult;
  rss: { before: Rss; after: Rss };
  status: { before: Timed; after: Timed };
  plan: { before: Timed; after: Timed };
}

/** The `p`-quantile (0–1) of `xs` by nearest rank; NaN when empty. */
export function quantile(xs: readonly number[], p: number): number {
  if (!xs.length) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/** The headline figures of one side. Times in seconds. */
export function figures(r: SideResult) {
  const ok = r.sim.nodes.filter((n) => !n.error && n.readyAt !== undefined);
  const joinReady = ok.map((n) => (n.readyAt! - n.startAt) / 1000);
  const approve = r.sim.nodes.filter((n) => n.csrApprovedAt !== undefined && n.csrCreatedAt !== undefined).map((n) => (n.csrApprovedAt! - n.csrCreatedAt!) / 1000);
  const certified = r.sim.nodes.filter((n) => !n.error).map((n) => (n.certifiedMs - n.postedMs) / 1000);
  // While CSRs queue (the next one was created before the previous approval), the gap between two
  // approvals is one decision's service time.
  const byApproval = r.sim.nodes.filter((n) => n.csrApprovedAt !== undefined && n.csrCreatedAt !== undefined).sort((x, y) => x.csrApprovedAt! - y.csrApprovedAt!);
  const gaps = byApproval.slice(1).flatMap((n, i) => (n.csrCreatedAt! <= byApproval[i]!.csrApprovedAt! ? [n.csrApprovedAt! - byApproval[i]!.csrApprovedAt!] : []));
  const approvers = new Map<string, number>();
  for (const n of r.sim.nodes) if (n.approvedBy) approvers.set(n.approvedBy, (approvers.get(n.approvedBy) ?? 0) + 1);
  return {
    ready: ok.length,
    failed: r.sim.nodes.filter((n) => n.error).length,
    wallS: r.sim.wallMs / 1000,
    nodesPerS: ok.length / (r.sim.wallMs / 1000),
    joinReadyP50: quantile(joinReady, 0.5),
    joinReadyP99: quantile(joinReady, 0.99),
    approveP50: quantile(approve, 0.5),
    approveP99: quantile(approve, 0.99),
    certP50: quantile(certified, 0.5),
    certP99: quantile(certified, 0.99),
    queuedGapMsP50: quantile(gaps, 0.5),
    approvers: [...approvers].map(([k, v]) => `${k} ×${v}`).join(', '),
    firstError: r.sim.nodes.find((n) => n.error)?.error,
  };
}

const f = (x: number | undefined, d = 2) => (x === undefined || Number.isNaN(x) ? '—' : x.toFixed(d));
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !b || Number.isNaN(a) || Number.isNaN(b) ? '—' : (a / b).toFixed(2));
const timed = (t: Timed) => (t ? `${f(t.ms / 1000)} (rc ${t.code})` : 'n/a');

/** Prints the comparison table. */
export function printReport(kc: SideResult, adm: SideResult, settings: { nodes: number; burst: number }): void {
  const a = figures(kc);
  const b = figures(adm);
  const rows: [string, string, string, string][] = [
    ['Nodes Ready / failed joins', `${a.ready} / ${a.failed}`, `${b.ready} / ${b.failed}`, ''],
    ['whole run (s, first token → last Ready)', f(a.wallS, 1), f(b.wallS, 1), ratio(a.wallS, b.wallS)],
    ['join throughput (Nodes/s)', f(a.nodesPerS), f(b.nodesPerS), ratio(a.nodesPerS, b.nodesPerS)],
    ['join → Ready p50 (s)', f(a.joinReadyP50), f(b.joinReadyP50), ratio(a.joinReadyP50, b.joinReadyP50)],
    ['join → Ready p99 (s)', f(a.joinReadyP99), f(b.joinReadyP99), ratio(a.joinReadyP99, b.joinReadyP99)],
    ['CSR created → Approved p50 (s)', f(a.approveP50), f(b.approveP50), ratio(a.approveP50, b.approveP50)],
    ['CSR created → Approved p99 (s)', f(a.approveP99), f(b.approveP99), ratio(a.approveP99, b.approveP99)],
    ['CSR posted → certificate read p50 (s)', f(a.certP50), f(b.certP50), ratio(a.certP50, b.certP50)],
    ['CSR posted → certificate read p99 (s)', f(a.certP99), f(b.certP99), ratio(a.certP99, b.certP99)],
    ['approval gap while CSRs queue, p50 (ms)', f(a.queuedGapMsP50, 0), f(b.queuedGapMsP50, 0), ratio(a.queuedGapMsP50, b.queuedGapMsP50)],
    ['kube-apiserver RSS at 0 nodes (MiB)', f(kc.rss.before.apiserverMiB, 0), f(adm.rss.before.apiserverMiB, 0), ratio(kc.rss.before.apiserverMiB, adm.rss.before.apiserverMiB)],
    [`kube-apiserver RSS at ${settings.nodes} nodes (MiB)`, f(kc.rss.after.apiserverMiB, 0), f(adm.rss.after.apiserverMiB, 0), ratio(kc.rss.after.apiserverMiB, adm.rss.after.apiserverMiB)],
    ['etcd RSS at 0 nodes (MiB)', f(kc.rss.before.etcdMiB, 0), f(adm.rss.before.etcdMiB, 0), ratio(kc.rss.before.etcdMiB, adm.rss.before.etcdMiB)],
    [`etcd RSS at ${settings.nodes} nodes (MiB)`, f(kc.rss.after.etcdMiB, 0), f(adm.rss.after.etcdMiB, 0), ratio(kc.rss.after.etcdMiB, adm.rss.after.etcdMiB)],
    ['`status` at 0 nodes (s)', timed(kc.status.before), timed(adm.status.before), ''],
    [`\`status\` at ${settings.nodes} nodes (s)`, timed(kc.status.after), timed(adm.status.after), ''],
    ['`upgrade plan` at 0 nodes (s)', timed(kc.plan.before), timed(adm.plan.before), ratio(kc.plan.before?.ms, adm.plan.before?.ms)],
    [`\`upgrade plan\` at ${settings.nodes} nodes (s)`, timed(kc.plan.after), timed(adm.plan.after), ratio(kc.plan.after?.ms, adm.plan.after?.ms)],
  ];
  console.log(`\nscale: ${settings.nodes} simulated nodes (kwok), bursts of ${settings.burst}, one run per side, one after the other, same machine and script`);
  console.log(`  ${''.padEnd(44)} ${'kubeception'.padStart(14)} ${'kubeadm'.padStart(14)} ${'ratio kc/adm'.padStart(13)}`);
  for (const [name, x, y, r] of rows) console.log(`  ${name.padEnd(44)} ${x.padStart(14)} ${y.padStart(14)} ${r.padStart(13)}`);
  for (const [r, fig] of [[kc, a], [adm, b]] as const) {
    const avg = (k: 'tokensMs' | 'signedMs' | 'joinMs' | 'readyMs') => f(r.sim.bursts.reduce((s, x) => s + x[k], 0) / Math.max(1, r.sim.bursts.length) / 1000);
    console.log(`  ${r.side}: approved by ${fig.approvers || '—'}; per burst (mean s): tokens ${avg('tokensMs')}, signed ${avg('signedMs')}, all joined ${avg('joinMs')}, then all Ready ${avg('readyMs')}${r.sim.timedOut ? '; STOPPED at the time limit' : ''}${fig.firstError ? `; first error: ${fig.firstError}` : ''}`);
    console.log(`    processes summed: kube-apiserver ${r.rss.before.apiservers}→${r.rss.after.apiservers}, etcd ${r.rss.before.etcds}→${r.rss.after.etcds}`);
  }
  console.log('  kubeadm has no `status`; its `upgrade plan` is given the cluster\'s own version (no release lookup: the bed has no way out).');
}
