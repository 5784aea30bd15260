/**
 * `kubeception upgrade plan`: what the cluster runs, what an upgrade to a target would change, and
 * whether the version-skew policy allows it (lib/upgrade/skew.ts). Reads only (the apiserver with
 * admin.conf, the local etcd member's status); writes nothing.
 * @see kubernetes/cmd/kubeadm/app/cmd/upgrade/plan.go (the component table it prints)
 */
import { probeHttps } from '../net/probe.ts';
import { etcdClientUrls } from '../etcd/config.ts';
import { healthcheckTls } from '../steps/bootstrap/etcd.ts';
import { coreDNSObjects } from '../../manifests/addons/coredns.ts';
import { image } from '../../manifests/common.ts';
import { skewChecks, type ClusterVersions, type SkewCheck } from './skew.ts';
import type { Cluster, KubernetesObject, V1Node } from '../k8s/client.ts';
import type { Context } from '../context.ts';
import type { ResolvedConfig } from '../types.ts';

/** The workloads an upgrade changes, in the order `upgrade apply` rolls them. */
export const UPGRADE_COMPONENTS = [
  { kind: 'DaemonSet', name: 'kube-apiserver' },
  { kind: 'Deployment', name: 'kube-controller-manager' },
  { kind: 'Deployment', name: 'kube-scheduler' },
  { kind: 'DaemonSet', name: 'kube-proxy' },
  { kind: 'Deployment', name: 'coredns' },
] as const;

/** One row of the plan. `current` is the image tag of the live pod template; undefined if absent. */
export interface ComponentRow {
  name: string;
  kind: string;
  current?: string;
  target: string;
}

/** The plan, also the JSON document of `upgrade plan --output json` (`kind: UpgradePlan`). */
export interface UpgradePlan {
  apiVersion: 'kubeception.io/v1alpha1';
  kind: 'UpgradePlan';
  clusterVersion: string;
  target: string;
  components: ComponentRow[];
  kubelets: { node: string; version: string; target: string }[];
  etcd: { version?: string; target: string };
  checks: SkewCheck[];
  /** True when no check is an error. */
  allowed: boolean;
}

type Workload = KubernetesObject & { spec?: { template?: { spec?: { containers?: { name?: string; image?: string }[] } } } };

/** The tag of the first container's image of a workload (`registry.k8s.io/kube-apiserver:v1.34.4` → `v1.34.4`). */
export function imageTag(w: Workload | undefined): string | undefined {
  const img = w?.spec?.template?.spec?.containers?.[0]?.image;
  return img?.includes(':') ? img.slice(img.lastIndexOf(':') + 1) : undefined;
}

/** The image each component gets under `config` (its kubernetesVersion is the target). */
export function targetImages(config: ResolvedConfig): Record<(typeof UPGRADE_COMPONENTS)[number]['name'], string> {
  const workloadImage = (objs: KubernetesObject[], kind: string) => imageTag(objs.find((o) => o.kind === kind) as Workload) ?? '?';
  return {
    'kube-apiserver': config.kubernetesVersion,
    'kube-controller-manager': config.kubernetesVersion,
    'kube-scheduler': config.kubernetesVersion,
    'kube-proxy': image(config, 'kube-proxy').split(':').pop()!,
    coredns: workloadImage(coreDNSObjects(config, 1), 'Deployment'),
  };
}


/** The local etcd member's version (Maintenance/Status), or undefined if it does not answer. */
export async function etcdVersion(ctx: Context): Promise<string | undefined> {
  const tls = await healthcheckTls(ctx).catch(() => undefined);
  if (!tls) return undefined;
  const r = await probeHttps(new URL('/v3/maintenance/status', etcdClientUrls(ctx.config)[0]!).href, tls, 3_000, '{}');
  return 'status' in r && r.status === 200 ? (JSON.parse(r.body) as { version?: string }).version : undefined;
}

/** Versions the skew policy needs, read from the cluster. */
export async function clusterVersions(ctx: Context, api: Cluster): Promise<ClusterVersions> {
  const [cluster, nodes, etcd] = await Promise.all([api.version(), api.list<V1Node>('v1', 'Node'), etcdVersion(ctx)]);
  return { cluster, kubelets: nodes.map((n) => ({ node: n.metadata?.name ?? '?', version: n.status?.nodeInfo?.kubeletVersion ?? '?' })), ...(etcd && { etcd }) };
}

/**
 * The plan for moving the cluster to `config.kubernetesVersion`.
 * @param config the site's config with kubernetesVersion set to the target.
 */
export async function upgradePlan(ctx: Context, api: Cluster): Promise<UpgradePlan> {
  const target = ctx.config.kubernetesVersion;
  const versions = await clusterVersions(ctx, api);
  const targets = targetImages(ctx.config);
  const components = await Promise.all(UPGRADE_COMPONENTS.map(async (c) => {
    const live = await api.read<Workload>({ apiVersion: 'apps/v1', kind: c.kind, metadata: { name: c.name, namespace: 'kube-system' } });
    return { name: c.name, kind: c.kind, current: imageTag(live), target: targets[c.name] };
  }));
  const checks = skewChecks(versions, target);
  return {
    apiVersion: 'kubeception.io/v1alpha1',
    kind: 'UpgradePlan',
    clusterVersion: versions.cluster,
    target,
    components,
    kubelets: versions.kubelets.map((k) => ({ ...k, target })),
    etcd: { ...(versions.etcd && { version: versions.etcd }), target: 'unchanged (installed by the distro)' },
    checks,
    allowed: !checks.some((c) => c.severity === 'error'),
  };
}

/** The plan as text: kubeadm's component table, then kubelets, etcd and the checks. */
export function formatPlan(p: UpgradePlan): string {
  const rows = (head: string[], body: string[][]) => {
    const w = head.map((_, i) => Math.max(...[head, ...body].map((r) => r[i]!.length)));
    return [head, ...body].map((r) => r.map((c, i) => c.padEnd(w[i]! + 3)).join('').trimEnd()).join('\n');
  };
  const lines = [
    `Cluster version: ${p.clusterVersion}    Target: ${p.target}`,
    '',
    rows(['COMPONENT', 'KIND', 'CURRENT', 'TARGET'], p.components.map((c) => [c.name, c.kind, c.current ?? '(absent)', c.current === undefined ? '(not installed)' : c.target])),
    '',
    'Kubelets (upgraded per node: `kubeception upgrade node` after the distro installed the target kubelet):',
    rows(['NODE', 'CURRENT', 'TARGET'], p.kubelets.map((k) => [k.node, k.version, k.target])),
    '',
    `etcd: ${p.etcd.version ?? 'unknown (no answer)'} → ${p.etcd.target}`,
    '',
  ];
  if (!p.checks.length) lines.push('Checks: all passed.');
  for (const c of p.checks) lines.push(`[${c.severity}] ${c.id}: ${c.why}`, `    fix: ${c.fix}`);
  lines.push('', p.allowed ? `You can now apply the upgrade: kubeception upgrade apply ${p.target}` : 'The upgrade is refused until the errors above are fixed.');
  return `${lines.join('\n')}\n`;
}
