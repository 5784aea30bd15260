/**
 * Reads what `kubeception status` checks, all at once and read-only: the apiserver through plain
 * HTTPS GETs with this control-plane node's admin credentials (no API client library: one run stays
 * well under a second), etcd's members and their health, a DNS query to CoreDNS, the host's
 * certificates, recovery copy, snapshots and upgrade journal. Nothing is written anywhere.
 * Each check is bounded ({@link CHECK_TIMEOUT_MS}); one that throws is a `fail` naming the error.
 */
import { Resolver } from 'node:dns/promises';
import { isIPv6 } from 'node:net';
import { KubeceptionError } from '../errors.ts';
import { probeHttps, type TlsClient } from '../net/probe.ts';
import { clusterDNSIP, firstServiceIP, url } from '../net/cidr.ts';
import { adminTls, localApiserverUrl } from '../k8s/apiserver.ts';
import { controlPlaneUrl } from '../k8s/endpoints.ts';
import { listMembers } from '../etcd/members.ts';
import { probeEtcd } from '../etcd/health.ts';
import { etcdClientUrls } from '../etcd/config.ts';
import { listSnapshots } from '../etcd/snapshot-bundle.ts';
import { healthcheckTls } from '../steps/bootstrap/etcd.ts';
import { expiryReport } from '../pki/expiry.ts';
import { recoveryPaths, RECOVERY_UNIT } from '../steps/recovery/recovery.ts';
import { JOURNAL } from '../upgrade/journal.ts';
import { RENDERED_FROM } from '../../manifests/recovery.ts';
import { JOIN_SERVICE_NAME } from '../../manifests/join-service.ts';
import { CSR_APPROVER_NAME } from '../../manifests/csr-approver.ts';
import { fromYaml } from '../util/yaml.ts';
import {
  apiserversCheck, certificatesCheck, corednsCheck, deploymentCheck, etcdCheck, leaderCheck, nodesCheck, podNetworkCheck, recoveryCheck, snapshotsCheck, upgradeCheck,
  type CheckResult, type DeploymentLike, type LeaseLike, type NodeLike, type PodLike,
} from './checks.ts';
import type { HostFiles } from '../host/files.ts';
import type { ResolvedConfig } from '../types.ts';

/** Upper bound of one check (ms); a probe inside it has its own, shorter timeout. */
export const CHECK_TIMEOUT_MS = 3_000;
const PROBE_MS = 1_500;

/** What the gatherer reads the host with. */
export interface StatusHost {
  config: ResolvedConfig;
  files: HostFiles;
  /** The unit's ActiveState (`active`, `inactive`, `failed`, …). */
  unitState(unit: string): Promise<string>;
}

/** A GET against the apiserver: the parsed JSON, `undefined` for 404. @throws KubeceptionError `apiserver-request`. */
type ApiGet = <T>(path: string) => Promise<T | undefined>;

/**
 * A reader of this node's apiserver with admin.conf's credentials: the loopback URL first (this
 * node's own apiserver), else the cluster's stable address.
 * @throws HostStateError `kubeconfig-missing` (exit 2) off a control-plane node.
 */
async function apiReader(h: StatusHost): Promise<{ get: ApiGet; tls: TlsClient; server: string }> {
  const tls = await adminTls(h, 'final');
  const candidates = [...new Set([localApiserverUrl(h.config, 'final'), controlPlaneUrl(h.config)])];
  let server = candidates[0]!;
  for (const c of candidates) {
    const r = await probeHttps(`${c}/readyz`, tls, PROBE_MS);
    if (!('error' in r)) {
      server = c;
      break;
    }
  }
  const get: ApiGet = async <T>(path: string) => {
    const r = await probeHttps(`${server}${path}`, tls, PROBE_MS);
    if ('error' in r) throw new KubeceptionError('apiserver-request', { what: `GET ${path} at ${server}`, why: r.error, fix: 'check the apiservers (kubeception status, crictl ps)' });
    if (r.status === 404) return undefined;
    if (r.status !== 200) throw new KubeceptionError('apiserver-request', { what: `GET ${path} at ${server}`, why: `HTTP ${r.status}: ${r.body.slice(0, 160)}`, fix: 'check the apiservers (kubeception status, crictl ps)' });
    return JSON.parse(r.body) as T;
  };
  return { get, tls, server };
}

type List<T> = { items: T[] };

/** `fn` bounded by {@link CHECK_TIMEOUT_MS}; an error or timeout becomes a `fail` of `name`. Sets `ms`. */
async function bounded(name: string, fn: () => Promise<CheckResult>): Promise<CheckResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => resolve({ name, state: 'fail', detail: `no answer within ${CHECK_TIMEOUT_MS} ms` }), CHECK_TIMEOUT_MS);
  });
  const r = await Promise.race([fn().catch((err: unknown): CheckResult => ({ name, state: 'fail', detail: err instanceof KubeceptionError ? `${err.what}: ${err.why}` : String((err as Error)?.message ?? err) })), timeout]);
  clearTimeout(timer);
  return { ...r, ms: Math.round(performance.now() - started) };
}

/** etcd's member list from the first client URL that answers, then each member probed. */
async function etcd(h: StatusHost): Promise<CheckResult> {
  const tls = await healthcheckTls(h);
  let members: Awaited<ReturnType<typeof listMembers>> | undefined;
  let lastErr: unknown;
  for (const u of etcdClientUrls(h.config)) {
    try {
      members = await listMembers(u, tls);
      break;
    } catch (err) {
      lastErr = err;
    }
  }
  if (!members) throw lastErr;
  return etcdCheck(await Promise.all(members.map(async (m) => {
    const clientUrl = m.clientURLs[0] ?? '';
    return { name: m.name, clientUrl, learner: m.isLearner, why: clientUrl ? await probeEtcd(clientUrl, tls, PROBE_MS) : 'no client URL (not started)' };
  })));
}

/** Every address behind the `kubernetes` Service, each asked for /readyz (the shared serving certificate names `kubernetes`). */
async function apiservers(get: ApiGet, tls: TlsClient): Promise<CheckResult> {
  type Slice = { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[]; ports?: { name?: string; port?: number }[] };
  const slices = (await get<List<Slice>>('/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes'))?.items ?? [];
  const targets = slices.flatMap((s) => {
    const port = s.ports?.find((p) => p.name === 'https')?.port ?? s.ports?.[0]?.port ?? 6443;
    return (s.endpoints ?? []).flatMap((e) => e.addresses.map((a) => url('https', a, port)));
  });
  return apiserversCheck(await Promise.all([...new Set(targets)].map(async (t) => {
    const r = await probeHttps(`${t}/readyz`, { ...tls, servername: 'kubernetes' }, PROBE_MS);
    const why = 'error' in r ? r.error : r.status === 200 ? undefined : `HTTP ${r.status}`;
    return { endpoint: t.replace(/^https:\/\//, ''), why };
  })));
}

/** A query for the kubernetes Service's name at the cluster DNS address (the kube-dns Service). */
async function coredns(config: ResolvedConfig): Promise<CheckResult> {
  const { serviceSubnet, dnsDomain } = config.networking;
  const server = clusterDNSIP(serviceSubnet);
  const expected = firstServiceIP(serviceSubnet);
  const query = `kubernetes.default.svc.${dnsDomain}`;
  const resolver = new Resolver({ timeout: 700, tries: 2 });
  resolver.setServers([server]);
  const answer = await (isIPv6(expected) ? resolver.resolve6(query) : resolver.resolve4(query)).catch((err: NodeJS.ErrnoException) => ({ error: err.code ?? err.message }));
  return corednsCheck(query, server, expected, answer);
}

/** The recovery copy's generation (from its rendered-from annotation) against the DaemonSet's. */
async function recovery(h: StatusHost, get: ApiGet): Promise<CheckResult> {
  const [ds, text, watcher] = await Promise.all([
    get<{ metadata?: { generation?: number } }>('/apis/apps/v1/namespaces/kube-system/daemonsets/kube-apiserver'),
    h.files.read(recoveryPaths(h.config).manifest),
    h.unitState(RECOVERY_UNIT),
  ]);
  const from = text === undefined ? undefined : (fromYaml(text, recoveryPaths(h.config).manifest) as { metadata?: { annotations?: Record<string, string> } })?.metadata?.annotations?.[RENDERED_FROM];
  const gen = from ? Number(/generation (\d+)/.exec(from)?.[1]) : undefined;
  return recoveryCheck(Number.isFinite(gen) ? gen : undefined, ds?.metadata?.generation, watcher);
}

async function snapshots(h: StatusHost, now: Date): Promise<CheckResult> {
  const listed = (await listSnapshots(h)).filter((s) => 'meta' in s);
  const newest = listed.at(-1);
  return snapshotsCheck(newest && 'meta' in newest ? { name: newest.name, created: new Date(newest.meta.created) } : undefined, h.config.etcd.snapshots, listed.length, now);
}

async function upgrade(h: StatusHost): Promise<CheckResult> {
  const text = await h.files.read(JOURNAL);
  return upgradeCheck(text === undefined ? undefined : JSON.parse(text));
}

/**
 * Runs every check at once.
 * @returns the checks in a fixed order. Never throws for an unhealthy cluster (that is a `fail`).
 * @throws HostStateError `kubeconfig-missing`/`kubeconfig-invalid` (exit 2): not a control-plane node.
 */
export async function gatherStatus(h: StatusHost, now = () => new Date()): Promise<CheckResult[]> {
  const { get, tls } = await apiReader(h);
  const nodes = get<List<NodeLike>>('/api/v1/nodes').then((l) => l?.items ?? []);
  nodes.catch(() => undefined);
  const plugin = h.config.podNetwork.plugin;
  const checks: [string, () => Promise<CheckResult>][] = [
    ['etcd', () => etcd(h)],
    ['apiservers', () => apiservers(get, tls)],
    ['controller-manager-leader', async () => leaderCheck('kube-controller-manager', await get<LeaseLike>('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager'), now())],
    ['scheduler-leader', async () => leaderCheck('kube-scheduler', await get<LeaseLike>('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler'), now())],
    ['nodes', async () => nodesCheck(await nodes)],
    ['pod-network', async () => podNetworkCheck(await nodes, plugin, plugin === 'none' ? undefined : (await get<List<PodLike>>(`/api/v1/namespaces/kube-system/pods?labelSelector=${encodeURIComponent(`k8s-app=${plugin}`)}`))?.items ?? [])],
    ['coredns', () => coredns(h.config)],
    ['join-service', async () => deploymentCheck('join-service', JOIN_SERVICE_NAME, await get<DeploymentLike>(`/apis/apps/v1/namespaces/kube-system/deployments/${JOIN_SERVICE_NAME}`))],
    ['csr-approver', async () => deploymentCheck('csr-approver', CSR_APPROVER_NAME, await get<DeploymentLike>(`/apis/apps/v1/namespaces/kube-system/deployments/${CSR_APPROVER_NAME}`))],
    ['certificates', async () => certificatesCheck((await expiryReport(h.config, h.files)).certificates, now())],
    ['recovery', () => recovery(h, get)],
    ['etcd-snapshots', () => snapshots(h, now())],
    ['upgrade', () => upgrade(h)],
  ];
  return Promise.all(checks.map(([name, fn]) => bounded(name, fn)));
}
