/**
 * The addon steps of the bootstrap, kubeadm's `addon/coredns` and `addon/kube-proxy` phases plus the
 * pod network (`addon/flannel`): each applies its objects through the active apiserver (the
 * bootstrap one while it runs: they go in while the self-hosted one starts) with
 * server-side apply under kubeception's field manager, so a re-run changes nothing and an operator's
 * edits to fields kubeception does not set survive.
 *
 * A disabled addon (`dns.disabled`, `proxy.disabled`, `networking.plugin: none`) is recorded in the
 * ConfigMap `kube-system/kubeception-addons` and never applied again by any later run, whatever its
 * config says (kubeadm likewise never re-installs an addon that `init` skipped); removing its key
 * from that ConfigMap re-enables it. Objects already in the cluster are left as they are.
 *
 * Host effects: none on the host; objects applied in kube-system, the ConfigMap written.
 */
import { kubeProxyObjects } from '../../../manifests/addons/kube-proxy.ts';
import { coreDNSObjects, COREDNS_REPLICAS } from '../../../manifests/addons/coredns.ts';
import { flannelObjects } from '../../../manifests/addons/flannel.ts';
import { MANAGED_BY, NAMESPACE } from '../../../manifests/common.ts';
import { cluster } from '../../k8s/apiserver.ts';
import { pollUntil } from '../../util/poll.ts';
import { activeApiserver } from '../bootstrap/control-plane.ts';
import { networkConditions } from '../join/join-network.ts';
import type { Cluster, KubernetesObject, V1Deployment, V1Node } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import type { ResolvedConfig } from '../../types.ts';

/** The addons, by the key they are recorded under. */
export type Addon = 'coredns' | 'kube-proxy' | 'flannel';
/** ConfigMap in kube-system holding `<addon>: <why it was disabled>` for each disabled addon. */
export const ADDONS_CONFIGMAP = 'kubeception-addons';

const recordRef = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ADDONS_CONFIGMAP, namespace: NAMESPACE } };

/** Why this run's config disables `addon`, or false. */
export function disabledByConfig(config: ResolvedConfig, addon: Addon): string | false {
  if (addon === 'coredns') return config.dns.disabled && 'dns.disabled is true';
  if (addon === 'kube-proxy') return config.proxy.disabled && 'proxy.disabled is true';
  return config.podNetwork.plugin === 'none' && "networking.plugin is 'none'";
}

/** The recorded disabled addons (`{}` if the ConfigMap does not exist). */
export async function disabledAddons(api: Cluster): Promise<Record<string, string>> {
  return (await api.read<{ data?: Record<string, string> } & KubernetesObject>(recordRef))?.data ?? {};
}

/** Records `addon` as disabled (keeps the other keys, which kubeception's field manager also owns). @returns true if written. */
async function recordDisabled(api: Cluster, addon: Addon, why: string): Promise<boolean> {
  const data = await disabledAddons(api);
  if (data[addon] !== undefined) return false;
  await api.apply([{ ...recordRef, metadata: { ...recordRef.metadata, labels: { ...MANAGED_BY } }, data: { ...data, [addon]: why } } as KubernetesObject]);
  return true;
}

/** `skipIf` of an addon step: the addon was disabled by an earlier run (and is not disabled by this one, which records it). */
export function disabledEarlier(addon: Addon) {
  return async (ctx: Context): Promise<string | false> => {
    if (disabledByConfig(ctx.config, addon)) return false;
    const why = (await disabledAddons(await cluster(ctx, await activeApiserver(ctx))))[addon];
    return why === undefined ? false : `${addon} was disabled (${why}) and is never re-applied; to install it, delete the key "${addon}" from ConfigMap kube-system/${ADDONS_CONFIGMAP}`;
  };
}

async function applyAddon(ctx: Context, addon: Addon, objects: (api: Cluster) => Promise<KubernetesObject[]>): Promise<StepOutcome> {
  const api = await cluster(ctx, await activeApiserver(ctx));
  const off = disabledByConfig(ctx.config, addon);
  if (off) {
    const wrote = await recordDisabled(api, addon, off);
    return { changed: wrote, detail: `${addon} disabled (${off})${wrote ? `; recorded in ConfigMap kube-system/${ADDONS_CONFIGMAP}` : ''}` };
  }
  const changed = await api.apply(await objects(api));
  for (const ref of changed) ctx.log.info(`applied ${ref}`);
  return { changed: changed.length > 0, detail: changed.length ? `${changed.length} object(s) applied` : 'up to date' };
}

/** `addon/kube-proxy`: kube-proxy's ServiceAccount, binding, ConfigMap and DaemonSet. */
export function applyKubeProxy(ctx: Context): Promise<StepOutcome> {
  return applyAddon(ctx, 'kube-proxy', async () => kubeProxyObjects(ctx.config));
}

/** `addon/flannel`: the pod network. With `networking.plugin: none` it says what is missing. */
export async function applyFlannel(ctx: Context): Promise<StepOutcome> {
  const out = await applyAddon(ctx, 'flannel', async () => flannelObjects(ctx.config));
  if (ctx.config.podNetwork.plugin === 'none')
    ctx.log.warn('no pod network is installed (networking.plugin: none): CoreDNS and every pod that is not hostNetwork stay Pending, and nodes NotReady, until you install a network plugin');
  return out;
}

/** `addon/coredns`: CoreDNS, keeping the Deployment's current replica count (an operator's scaling survives). */
export async function applyCoreDNS(ctx: Context): Promise<StepOutcome> {
  const out = await applyAddon(ctx, 'coredns', async (api) => {
    const current = await api.read<V1Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'coredns', namespace: NAMESPACE } });
    return coreDNSObjects(ctx.config, current?.spec?.replicas ?? COREDNS_REPLICAS);
  });
  if (!ctx.config.dns.disabled && !(await podNetworkReady(ctx))) return { ...out, detail: `${out.detail}; CoreDNS stays Pending until the pod network is ready` };
  return out;
}

/** How long {@link noPodNetwork} waits for a Node whose Ready condition does not yet tell about its network, ms. */
export const NETWORK_VERDICT_TIMEOUT_MS = 30_000;

/** A Ready=False message of a kubelet whose runtime has no pod network (no CNI config loaded). */
const NO_NETWORK = /network not ready|NetworkReady=false|cni/i;

/**
 * What a Node's conditions say about its pod network: true (Ready, no `NetworkUnavailable=True`),
 * false (`NetworkUnavailable=True`, or Ready=False because the runtime's network is not ready), or
 * undefined (not yet known: no Node, no Ready condition, Unknown, or False for another reason).
 */
export function networkVerdict(node: V1Node | undefined): boolean | undefined {
  const c = networkConditions(node);
  if (c.ready === 'True') return c.networkUnavailable !== 'True';
  if (c.networkUnavailable === 'True') return false;
  const message = node?.status?.conditions?.find((x) => x.type === 'Ready')?.message ?? '';
  return c.ready === 'False' && NO_NETWORK.test(message) ? false : undefined;
}

/**
 * True if this node's pod network is up: the Node is Ready (the runtime reports its CNI config
 * loaded) and no `NetworkUnavailable=True` condition is set (flannel sets it False when its routes are up).
 * With `waitMs`, a Node whose Ready condition does not yet tell about its network — absent, Unknown,
 * or False for another reason (a kubelet that registered a moment ago reports "container runtime
 * status check may not have completed yet") — is read again every 250 ms until it does or `waitMs`
 * passes (never under `--dry-run`): whether bootstrap installs the join service must not depend on
 * how soon after the Node's registration the question was asked.
 */
export async function podNetworkReady(ctx: Context, waitMs = 0): Promise<boolean> {
  const api = await cluster(ctx, await activeApiserver(ctx));
  const ref = { apiVersion: 'v1', kind: 'Node', metadata: { name: ctx.config.nodeName } };
  const verdict = async () => networkVerdict(await api.read<V1Node>(ref));
  const first = await verdict();
  if (first !== undefined || waitMs <= 0 || ctx.dryRun) return first ?? false;
  return (await pollUntil(async () => (await verdict()) ?? undefined, { timeoutMs: waitMs, intervalMs: 250, signal: ctx.signal })) ?? false;
}

/**
 * `skipIf` of the join-service steps: when kubeception installs no pod network (`networking.plugin:
 * none` now, or flannel recorded as disabled earlier) and none is up on this node, the join
 * service's pod cannot start; say so instead of waiting for it. A Node registered a moment ago is
 * given up to {@link NETWORK_VERDICT_TIMEOUT_MS} to report its network.
 */
export async function noPodNetwork(ctx: Context): Promise<string | false> {
  const off = disabledByConfig(ctx.config, 'flannel') || (await disabledAddons(await cluster(ctx, await activeApiserver(ctx)))).flannel;
  if (!off) return false;
  if (await podNetworkReady(ctx, NETWORK_VERDICT_TIMEOUT_MS)) return false;
  return `no pod network on this node yet (flannel is disabled: ${off}): install a network plugin, then re-run bootstrap to start the join service`;
}
