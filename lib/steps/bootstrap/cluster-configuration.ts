/**
 * The cluster's fixed settings, kept in the cluster as kubeadm keeps its ClusterConfiguration in
 * `kube-system/kubeadm-config` (kubeadm's `upload-config` phase): the config fields a running cluster
 * cannot change — `networking.podSubnet`, `networking.serviceSubnet`, `networking.dnsDomain` — are
 * recorded by the `upload-config` step, and the preflight check `ClusterConfiguration` refuses a run
 * (and `plan`) whose config names other values, before anything on the host changes (exit 2).
 *
 * Why each is fixed: every Service's ClusterIP (and the apiserver certificate's SAN for the
 * `kubernetes` Service) is allocated from the serviceSubnet; every Node's `spec.podCIDR` is allocated
 * once from the podSubnet and never re-allocated; every pod's resolv.conf and every Service name
 * in workloads' config carries the dnsDomain. kubeadm refuses the same changes on upgrade
 * (`kubeadm upgrade` reads kubeadm-config; its docs say these cannot change after init).
 *
 * A cluster made before the record existed is read from its live objects instead: the self-hosted
 * kube-apiserver's `--service-cluster-ip-range`, the kube-controller-manager's `--cluster-cidr`, and
 * this host's kubelet `clusterDomain`; the next run records them.
 *
 * Host effects: none. API effects: ConfigMap `kube-system/kubeception-config` (`upload-config`).
 * @see kubernetes/cmd/kubeadm/app/phases/uploadconfig/uploadconfig.go
 */
import { join } from 'node:path';
import { MANAGED_BY, NAMESPACE } from '../../../manifests/common.ts';
import { KUBELET_CONFIG } from '../../constants.ts';
import { cluster, probeApiserver } from '../../k8s/apiserver.ts';
import { fromYaml } from '../../util/yaml.ts';
import { activeApiserver } from './control-plane.ts';
import type { Cluster, KubernetesObject } from '../../k8s/client.ts';
import type { Context } from '../../context.ts';
import type { StepOutcome } from '../../engine/dsl.ts';
import type { ResolvedConfig } from '../../types.ts';
import type { Check } from '../preflight/preflight-check.ts';

/** The ConfigMap in kube-system holding the record (data key {@link RECORD_KEY}, JSON). */
export const CLUSTER_CONFIG_CONFIGMAP = 'kubeception-config';
export const RECORD_KEY = 'ClusterConfiguration';

/** The config fields fixed at the cluster's creation, by their path in kubeception.config.ts. */
export const FIXED_FIELDS = {
  'networking.podSubnet': {
    get: (c: ResolvedConfig) => c.networking.podSubnet,
    why: "each Node's spec.podCIDR was allocated from it once and is never re-allocated, and the pod network routes it",
  },
  'networking.serviceSubnet': {
    get: (c: ResolvedConfig) => c.networking.serviceSubnet,
    why: "every Service's ClusterIP, the kubernetes Service's address in the apiserver certificate and CoreDNS's address in every pod were allocated from it",
  },
  'networking.dnsDomain': {
    get: (c: ResolvedConfig) => c.networking.dnsDomain,
    why: "every pod's resolv.conf searches it and every in-cluster Service name ends in it",
  },
} as const;
export type FixedField = keyof typeof FIXED_FIELDS;

/** The recorded values: field path → value (a field absent when it could not be found). */
export type ClusterRecord = Partial<Record<FixedField, string>>;

const recordRef = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: CLUSTER_CONFIG_CONFIGMAP, namespace: NAMESPACE } };

/** The record `upload-config` writes for `config`. Pure. */
export function recordOf(config: ResolvedConfig): Required<ClusterRecord> {
  return Object.fromEntries(Object.entries(FIXED_FIELDS).map(([k, f]) => [k, f.get(config)])) as Required<ClusterRecord>;
}

/** The ConfigMap `upload-config` applies. Pure. */
export function clusterConfigObject(config: ResolvedConfig): KubernetesObject {
  return { ...recordRef, metadata: { ...recordRef.metadata, labels: { ...MANAGED_BY } }, data: { [RECORD_KEY]: `${JSON.stringify(recordOf(config), null, 2)}\n` } } as KubernetesObject;
}

/** A flag's value in a workload's first container (`--name=value` in command or args). */
function flagOf(obj: KubernetesObject | undefined, name: string): string | undefined {
  const c = (obj as { spec?: { template?: { spec?: { containers?: { command?: string[]; args?: string[] }[] } } } } | undefined)?.spec?.template?.spec?.containers?.[0];
  const prefix = `--${name}=`;
  return [...(c?.command ?? []), ...(c?.args ?? [])].find((a) => a.startsWith(prefix))?.slice(prefix.length);
}

/**
 * What the cluster was made with: the record, else (a cluster older than it) its live objects and
 * this host's kubelet config. Reads only. @returns `{}` when nothing is known (a new cluster).
 */
export async function recordedClusterConfig(ctx: Pick<Context, 'files' | 'config'>, api: Cluster): Promise<{ record: ClusterRecord; source: string }> {
  const cm = await api.read<KubernetesObject & { data?: Record<string, string> }>(recordRef);
  const text = cm?.data?.[RECORD_KEY];
  if (text !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const record: ClusterRecord = {};
    for (const k of Object.keys(FIXED_FIELDS) as FixedField[]) {
      const v = (parsed as Record<string, unknown> | undefined)?.[k];
      if (typeof v === 'string') record[k] = v;
    }
    return { record, source: `ConfigMap ${NAMESPACE}/${CLUSTER_CONFIG_CONFIGMAP}` };
  }
  const [apiserver, kcm] = await Promise.all([
    api.read<KubernetesObject>({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kube-apiserver', namespace: NAMESPACE } }),
    api.read<KubernetesObject>({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'kube-controller-manager', namespace: NAMESPACE } }),
  ]);
  const record: ClusterRecord = {};
  const service = flagOf(apiserver, 'service-cluster-ip-range');
  const pods = flagOf(kcm, 'cluster-cidr');
  if (service) record['networking.serviceSubnet'] = service;
  if (pods) record['networking.podSubnet'] = pods;
  const kubelet = await ctx.files.read(join(ctx.config.distro.paths.kubeletConfigDir, KUBELET_CONFIG));
  if (kubelet !== undefined && (service || pods)) {
    const domain = (() => {
      try {
        return (fromYaml(kubelet, KUBELET_CONFIG) as { clusterDomain?: unknown } | undefined)?.clusterDomain;
      } catch {
        return undefined;
      }
    })();
    if (typeof domain === 'string' && domain) record['networking.dnsDomain'] = domain;
  }
  return { record, source: 'the running kube-apiserver and kube-controller-manager flags and this host\'s kubelet config' };
}

const normal = (v: string) => v.split(',').map((s) => s.trim()).join(',');

/** One field whose config value differs from the cluster's. */
export interface FixedFieldChange {
  field: FixedField;
  cluster: string;
  config: string;
}

/** The fixed fields `config` would change. Pure. */
export function fixedFieldChanges(record: ClusterRecord, config: ResolvedConfig): FixedFieldChange[] {
  return (Object.keys(FIXED_FIELDS) as FixedField[]).flatMap((field) => {
    const was = record[field];
    const want = FIXED_FIELDS[field].get(config);
    return was !== undefined && normal(was) !== normal(want) ? [{ field, cluster: was, config: want }] : [];
  });
}

/**
 * Preflight check `ClusterConfiguration` of `run bootstrap` (and `plan bootstrap`): the config must
 * not change a field fixed at the cluster's creation ({@link FIXED_FIELDS}). Not ignorable: it is the
 * operator's input. Passes when no apiserver of this node answers (a fresh host; a cluster that is
 * down is compared on the run that finds it serving, before anything is applied through it).
 */
export const clusterConfigurationCheck: Check = {
  id: 'ClusterConfiguration',
  ignorable: false,
  async run(ctx) {
    let found: { record: ClusterRecord; source: string };
    try {
      const which = await activeApiserver(ctx);
      if ((await probeApiserver(ctx, which, 2_000)) !== undefined) return undefined;
      found = await recordedClusterConfig(ctx, await cluster(ctx, which));
    } catch {
      // A missing or unreadable admin.conf is KubeconfigReadable's to report.
      return undefined;
    }
    const changes = fixedFieldChanges(found.record, ctx.config);
    if (changes.length === 0) return undefined;
    return {
      message: changes.map((c) => `${c.field} is ${c.config} in the config, but the cluster was made with ${c.cluster} (${found.source}), and it cannot change on a running cluster: ${FIXED_FIELDS[c.field].why}`).join('; '),
      fix: `set ${changes.map((c) => `${c.field}: '${c.cluster}'`).join(', ')} in kubeception.config.ts again (another value needs a new cluster)`,
    };
  },
};

/**
 * `upload-config`: records {@link FIXED_FIELDS} of this run's config in ConfigMap
 * `kube-system/kubeception-config` (the preflight check refused a change, so this only creates the
 * record or rewrites the same values). @returns changed when the ConfigMap was created or changed.
 */
export async function uploadClusterConfig(ctx: Context): Promise<StepOutcome> {
  const api = await cluster(ctx, await activeApiserver(ctx));
  const changed = await api.apply([clusterConfigObject(ctx.config)]);
  return { changed: changed.length > 0, detail: changed.length ? `recorded ${Object.keys(FIXED_FIELDS).join(', ')} in ConfigMap ${NAMESPACE}/${CLUSTER_CONFIG_CONFIGMAP}` : 'up to date' };
}
