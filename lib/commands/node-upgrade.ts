/**
 * `kubeception upgrade status|pause|resume|rollback [NAME] [--kubeconfig FILE] [--output json]`: a
 * NodeUpgradePlan (default `kubelet`, the one `upgrade apply --nodes` creates) read, or its
 * `spec.paused` set, or (`rollback`, a Failed plan only) its `spec.rollback` set — each a JSON merge
 * patch. Through `--kubeconfig`, else the config's admin.conf.
 * Exit codes: status 0 (1 when the plan has Failed), pause/resume/rollback 0; 2 bad input, no such
 * plan, no kubeconfig, or `rollback` of a plan that has not Failed.
 */
import { ExitCode, HostStateError } from '../errors.ts';
import { RealFiles } from '../host/files.ts';
import { loadConfig } from '../config/load.ts';
import { cluster, kubeconfigFileCluster } from '../k8s/apiserver.ts';
import type { Cluster, KubernetesObject } from '../k8s/client.ts';
import { DEFAULT_PLAN_NAME, NODE_UPGRADE_API_VERSION, NODE_UPGRADE_KIND, PLAN_DEFAULTS, type NodeUpgradePlan } from '../node-upgrade/types.ts';
import type { CliIO } from '../cli-io.ts';

type Args = Record<string, unknown> & { _: string[] };

/** The plan as a few lines for a terminal: spec, conditions, one line per Node, the held Nodes. Pure. */
export function formatPlanStatus(p: NodeUpgradePlan): string {
  const s = p.status ?? {};
  const lines = [
    `NodeUpgradePlan ${p.metadata.name}: target ${p.spec.targetVersion}, phase ${s.phase ?? 'Pending'}, batch ${s.batch ?? 0}, maxUnavailable ${p.spec.maxUnavailable ?? PLAN_DEFAULTS.maxUnavailable}${p.spec.paused ? ', paused' : ''}${p.spec.rollback ? ', rollback requested' : ''}`,
    ...(s.conditions ?? []).filter((c) => c.status === 'True').map((c) => `  ${c.type} (${c.reason}): ${c.message}`),
  ];
  const rows = [['NODE', 'BATCH', 'PHASE', 'FROM', 'CORDONED-BY-KUBECEPTION', 'MESSAGE'], ...(s.nodes ?? []).map((n) => [n.name, String(n.batch), n.phase, n.fromVersion, n.cordonedByUs ? 'yes' : 'no', n.message ?? ''])];
  if (rows.length > 1) {
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    lines.push(...rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()));
  }
  if (s.held?.length) lines.push(`held (cordoned by an operator, left alone): ${s.held.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

async function api(args: Args, io: Pick<CliIO, 'cwd'>, packageDir: string): Promise<Cluster> {
  if (typeof args.kubeconfig === 'string') return kubeconfigFileCluster(new RealFiles(), args.kubeconfig, 'read and patch NodeUpgradePlans');
  const { config } = await loadConfig({ packageDir, cwd: io.cwd, configFile: args.config as string | undefined, distro: args.distro as string | undefined });
  return cluster({ files: new RealFiles(), config }, 'final');
}

/** Runs `upgrade status|pause|resume|rollback`. @returns the exit code. */
export async function nodeUpgradeCommand(sub: 'status' | 'pause' | 'resume' | 'rollback', args: Args, io: CliIO, packageDir: string): Promise<number> {
  const name = args._[2] ?? DEFAULT_PLAN_NAME;
  const ref = { apiVersion: NODE_UPGRADE_API_VERSION, kind: NODE_UPGRADE_KIND, metadata: { name } };
  const c = await api(args, io, packageDir);
  const plan = await c.read<NodeUpgradePlan & KubernetesObject>(ref);
  if (!plan)
    throw new HostStateError('plan-missing', { what: `NodeUpgradePlan ${name}`, why: 'the cluster has no such plan', fix: '`kubeception upgrade apply vX.Y.Z --nodes` creates one (or `kubectl get nodeupgradeplans` lists them)' });
  if (sub === 'status') {
    io.stdout(args.output === 'json' ? `${JSON.stringify({ apiVersion: plan.apiVersion, kind: plan.kind, metadata: { name }, spec: plan.spec, status: plan.status ?? {} })}\n` : formatPlanStatus(plan));
    return plan.status?.phase === 'Failed' ? ExitCode.stepFailed : ExitCode.ok;
  }
  if (sub === 'rollback') {
    const phase = plan.status?.phase ?? 'Pending';
    if (phase === 'RolledBack') {
      io.stdout(`NodeUpgradePlan ${name} is already rolled back\n`);
      return ExitCode.ok;
    }
    if (phase !== 'Failed')
      throw new HostStateError('plan-not-failed', { what: `NodeUpgradePlan ${name}`, why: `it is ${phase}: rollback returns the Nodes of a failed rollout (a running one is stopped with \`kubeception upgrade pause\`)`, fix: `\`kubeception upgrade status ${name}\` shows where it stands; run rollback once it has Failed` });
    await c.patch(ref, { spec: { rollback: true } }, 'merge');
    io.stdout(`NodeUpgradePlan ${name}: rollback requested — the failed Nodes their agents rolled back return to service (\`kubeception upgrade status ${name}\`)\n`);
    return ExitCode.ok;
  }
  await c.patch(ref, { spec: { paused: sub === 'pause' } }, 'merge');
  io.stdout(`NodeUpgradePlan ${name} ${sub === 'pause' ? 'paused: the controller changes nothing until `kubeception upgrade resume`' : 'resumed'}\n`);
  return ExitCode.ok;
}
