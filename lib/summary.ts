/**
 * The end of a run, as kubeadm ends `init` and `join`: what changed, how long it took, and what to do
 * next. Text for the terminal and one JSON `result` event; neither ever holds a token secret — the
 * join command (which does) is printed only in text, only when this run created the token.
 *
 * Inputs: the run's events (which steps changed, were skipped or failed), the task state the steps
 * wrote (`joinInfo`, `join`: lib/steps/contexts.ts) and the config.
 */
import { controlPlaneUrl, kubeconfigPaths } from './k8s/endpoints.ts';
import type { RunEvent } from './engine/events.ts';
import type { RunState } from './run-options.ts';
import type { ResolvedConfig } from './types.ts';

/** What the summary is made from. */
export interface SummaryInput {
  task: string;
  status: 'done' | 'failed';
  failedStep?: string;
  durationMs: number;
  events: readonly RunEvent[];
  state: RunState;
  config: ResolvedConfig;
}

/** The JSON `result` event: the run's outcome and how to reach and join the cluster. No secrets. */
export interface ResultEvent {
  event: 'result';
  task: string;
  status: 'done' | 'failed';
  failedStep?: string;
  durationMs: number;
  /** Step ids that changed the host, in the order they finished. */
  changed: string[];
  /** Step ids that ran and changed nothing. */
  unchanged: string[];
  skipped: string[];
  nodeName: string;
  /** The apiserver URL (bootstrap) or the cluster's apiserver the worker joined (join). */
  endpoint?: string;
  adminKubeconfig?: string;
  joinUrl?: string;
  caCertHash?: string;
  tokenId?: string;
  tokenCreated?: boolean;
  /** `etcd restore`: the snapshot restored, its revision, the RTO (ms) and where the old data dir is kept. */
  restore?: { snapshot: string; revision: number; rtoMs?: number; oldDataDir?: string };
}

const ids = (events: readonly RunEvent[], pred: (e: RunEvent) => boolean) => events.filter(pred).map((e) => (e as { step: string }).step);

/** The `result` event of a run. */
export function resultEvent(s: SummaryInput): ResultEvent {
  const r: ResultEvent = {
    event: 'result',
    task: s.task,
    status: s.status,
    ...(s.failedStep ? { failedStep: s.failedStep } : {}),
    durationMs: s.durationMs,
    changed: ids(s.events, (e) => e.event === 'step-done' && e.changed !== false),
    unchanged: ids(s.events, (e) => e.event === 'step-done' && e.changed === false),
    skipped: ids(s.events, (e) => e.event === 'step-skipped'),
    nodeName: s.config.nodeName,
  };
  if (s.state.join) r.endpoint = s.state.join.apiserver;
  else if (s.state.joinInfo || s.task === 'bootstrap') {
    r.endpoint = controlPlaneUrl(s.config);
    r.adminKubeconfig = kubeconfigPaths(s.config).admin;
  }
  const x = s.state.restore;
  if (x) r.restore = { snapshot: x.name, revision: x.revision, ...(x.rtoMs !== undefined && { rtoMs: x.rtoMs }), ...(x.aside && { oldDataDir: x.aside }) };
  const j = s.state.joinInfo;
  if (j) Object.assign(r, { joinUrl: j.url, caCertHash: j.caCertHash, tokenId: j.tokenId, tokenCreated: j.tokenCreated });
  return r;
}

/** `1m05s`, `12.3s`. */
export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/**
 * The text summary. `joinCommand` (holding the token secret) is included only when given, which the
 * CLI does only for a token created in this run and only on the terminal.
 */
export function renderSummary(s: SummaryInput, opts: { joinCommand?: string } = {}): string {
  const r = resultEvent(s);
  const counts = `${r.changed.length} changed, ${r.unchanged.length} unchanged, ${r.skipped.length} skipped`;
  if (r.status === 'failed' && r.task === 'etcd-restore') return restoreFailed(r, counts);
  if (r.status === 'failed') {
    const done = r.changed.length ? `  already changed by this run: ${r.changed.join(', ')}\n` : '  nothing was changed by this run\n';
    return `\n${r.task} failed at step ${r.failedStep} after ${formatDuration(r.durationMs)} (${counts}).\n${done}  Fix the cause above and re-run \`kubeception run ${r.task}\`: steps that already converged change nothing.\n`;
  }
  const lines = [``, `${r.task} done in ${formatDuration(r.durationMs)}: ${counts}.`];
  if (r.changed.length) lines.push(`  changed: ${r.changed.join(', ')}`);
  if (r.restore) lines.push(...restoreLines(r.restore));
  if (r.adminKubeconfig) lines.push(...controlPlaneNextSteps(r, opts.joinCommand));
  else if (s.state.join) lines.push(...workerNextSteps(r));
  return `${lines.join('\n')}\n`;
}

function controlPlaneNextSteps(r: ResultEvent, joinCommand: string | undefined): string[] {
  const out = ['', `Your Kubernetes control plane is running at ${r.endpoint}.`, '', 'To use kubectl as root on this host:', '', `  export KUBECONFIG=${r.adminKubeconfig}`, '  kubectl get nodes', ''];
  if (joinCommand) out.push("To join workers, run on each as root (the token is in the environment, not a flag: other local users can read a process's command line, not a root process's environment):", '', `  ${joinCommand}`, '', `The token (id ${r.tokenId}) is valid for 24h and is not printed again; make a new one with \`kubeception token create --print-join-command\`.`);
  else if (r.joinUrl) out.push(`Workers join through ${r.joinUrl}. Token ${r.tokenId} from an earlier run is still valid; to print a join command with a new token:`, '', '  kubeception token create --print-join-command');
  return out;
}

function workerNextSteps(r: ResultEvent): string[] {
  return [
    '',
    `This host joined the cluster at ${r.endpoint} as Node "${r.nodeName}".`,
    '',
    'To check it, on the control plane:',
    '',
    `  kubectl get node ${r.nodeName}    (Ready once the pod network runs on it)`,
    '',
    'and on this host: systemctl status kubelet; journalctl -u kubelet',
  ];
}

function restoreLines(x: NonNullable<ResultEvent['restore']>): string[] {
  return [
    '',
    `Restored etcd from ${x.snapshot} (revision ${x.revision})${x.rtoMs !== undefined ? `: the self-hosted kube-apiserver served it ${formatDuration(x.rtoMs)} after the restore began (RTO)` : ''}.`,
    ...(x.oldDataDir ? [`The old etcd data dir is kept at ${x.oldDataDir}; remove it once the restored cluster is what you want.`] : []),
    'Workers reconnect on their own: kubectl get nodes',
  ];
}

/** A failed restore: nothing changed (refused by restore-preflight), or how to go on. */
function restoreFailed(r: ResultEvent, counts: string): string {
  const head = `\netcd restore failed at step ${r.failedStep} after ${formatDuration(r.durationMs)} (${counts}).\n`;
  if (r.changed.length === 0 && (r.failedStep === 'restore-preflight' || r.failedStep === undefined)) return `${head}  nothing was changed on this host.\n`;
  return `${head}  already changed by this run: ${r.changed.join(', ') || 'none'}\n  Fix the cause above and run \`kubeception etcd restore ${r.restore?.snapshot ?? 'NAME'} --force\` again: the etcd data dir it replaces is moved aside, never deleted.\n`;
}
