/**
 * The kube-apiserver recovery static pod: a last-known-good copy of the self-hosted kube-apiserver
 * DaemonSet's pod, rendered at every converge, that the recovery watcher (see
 * {@link ./recovery-watcher.ts}) puts into the kubelet's `staticPodPath` when this node has no
 * serving apiserver — after a power cut, or after the DaemonSet pod was deleted — and removes once
 * the self-hosted pod serves again. It stands in for bootkube's pod checkpointer.
 *
 * The pod is the DaemonSet's template with what a static pod cannot have removed (service
 * account, scheduling fields) and every Secret / ConfigMap volume replaced by a read-only hostPath
 * directory holding the same files (written by `lib/steps/recovery/recovery.ts`, 0600). Its container keeps
 * the template's command, so it runs the same flags, including `--permit-port-sharing`: it and the
 * DaemonSet pod both bind `bindPort` (SO_REUSEPORT) while the watcher hands back.
 * Its labels differ from the DaemonSet's selector, so no controller ever adopts its mirror pod.
 * Pure data: same input, deep-equal output.
 */
import { join } from 'node:path';
import type { V1Container, V1DaemonSet, V1Pod, V1Probe, V1Volume } from '@kubernetes/client-node';
import { HostStateError } from '../lib/errors.ts';
import { componentLabels, NAMESPACE, type Manifest } from './common.ts';

/** Name of the recovery static pod (its mirror pod is `recovery-kube-apiserver-<nodeName>`). */
export const RECOVERY_POD = 'recovery-kube-apiserver';
/** Annotation naming the DaemonSet generation the pod was rendered from. */
export const RENDERED_FROM = 'kubeception.io/rendered-from';

/** A Secret or ConfigMap volume of the template, and the host directory that replaces it. */
export interface ProjectedVolume {
  volume: string;
  kind: 'Secret' | 'ConfigMap';
  name: string;
  hostDir: string;
}

/**
 * The volumes that become host directories: `<volumesDir>/<volume name>`.
 * @throws HostStateError `recovery-unsupported-volume` for a volume that is not secret, configMap or hostPath.
 */
export function projectedVolumes(ds: V1DaemonSet, volumesDir: string): ProjectedVolume[] {
  const out: ProjectedVolume[] = [];
  for (const v of ds.spec?.template.spec?.volumes ?? []) {
    if (v.secret?.secretName) out.push({ volume: v.name, kind: 'Secret', name: v.secret.secretName, hostDir: join(volumesDir, v.name) });
    else if (v.configMap?.name) out.push({ volume: v.name, kind: 'ConfigMap', name: v.configMap.name, hostDir: join(volumesDir, v.name) });
    else if (!v.hostPath)
      throw new HostStateError('recovery-unsupported-volume', {
        what: `DaemonSet ${NAMESPACE}/kube-apiserver volume ${v.name}`,
        why: 'the recovery static pod can only stand in for secret, configMap and hostPath volumes',
        fix: 'use one of those volume types in the kube-apiserver DaemonSet',
      });
  }
  return out;
}

/**
 * The recovery static pod from the live DaemonSet.
 * @param volumes from {@link projectedVolumes} (same `volumesDir`).
 * @param hostIP this node's IP: replaces the template's downward-API `status.hostIP` env values (in
 *   `$(VAR)` arguments too) and is the host of probes that name none. After a power cut the kubelet
 *   starts this pod before any apiserver answers, when it may not know its node's addresses yet.
 * @throws HostStateError `recovery-no-template` if the DaemonSet has no container.
 */
export function recoveryStaticPod(ds: V1DaemonSet, volumes: readonly ProjectedVolume[], hostIP?: string): Manifest<V1Pod> {
  const spec = ds.spec?.template.spec;
  if (!spec?.containers?.length)
    throw new HostStateError('recovery-no-template', { what: `DaemonSet ${NAMESPACE}/kube-apiserver`, why: 'its pod template has no container', fix: 'run `kubeception run bootstrap` to re-apply it' });
  const byName = new Map(volumes.map((v) => [v.volume, v]));
  const vols: V1Volume[] = (spec.volumes ?? []).map((v) => {
    const p = byName.get(v.name);
    return p ? { name: v.name, hostPath: { path: p.hostDir, type: 'Directory' } } : v;
  });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: RECOVERY_POD,
      namespace: NAMESPACE,
      labels: componentLabels(RECOVERY_POD),
      annotations: { [RENDERED_FROM]: `DaemonSet ${NAMESPACE}/kube-apiserver generation ${ds.metadata?.generation ?? 0}` },
    },
    spec: {
      hostNetwork: true,
      priorityClassName: spec.priorityClassName ?? 'system-node-critical',
      ...(spec.terminationGracePeriodSeconds !== undefined && { terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds }),
      ...(spec.dnsPolicy !== undefined && { dnsPolicy: spec.dnsPolicy }),
      ...(spec.securityContext !== undefined && { securityContext: spec.securityContext }),
      containers: hostIP === undefined ? spec.containers : spec.containers.map((c) => withHostIP(c, hostIP)),
      volumes: vols,
    },
  };
}

/** `c` with every `status.hostIP` env var resolved to `hostIP` and probes given a host. */
function withHostIP(c: V1Container, hostIP: string): V1Container {
  const fromHost = new Set((c.env ?? []).filter((e) => e.valueFrom?.fieldRef?.fieldPath === 'status.hostIP').map((e) => e.name));
  const sub = (s: string) => s.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, n: string) => (fromHost.has(n) ? hostIP : m));
  const probe = (p: V1Probe | undefined) => (p?.httpGet && !p.httpGet.host ? { ...p, httpGet: { ...p.httpGet, host: hostIP } } : p);
  const env = (c.env ?? []).map((e) => (fromHost.has(e.name) ? { name: e.name, value: hostIP } : e));
  return {
    ...c,
    ...(c.command && { command: c.command.map(sub) }),
    ...(c.args && { args: c.args.map(sub) }),
    ...(c.env && { env }),
    ...(c.startupProbe && { startupProbe: probe(c.startupProbe) }),
    ...(c.livenessProbe && { livenessProbe: probe(c.livenessProbe) }),
    ...(c.readinessProbe && { readinessProbe: probe(c.readinessProbe) }),
  };
}
