/**
 * The bootstrap control plane as static pods: `bootstrap-kube-apiserver`, `-kube-controller-manager`
 * and `-kube-scheduler`, which the kubelet runs from its `staticPodPath` until the self-hosted
 * control plane has taken over (bootkube's bootstrap control plane).
 *
 * They run `hostNetwork` next to the self-hosted instances, on the bootstrap ports of
 * {@link controlPlanePorts} (apiserver `bootstrapAPIEndpoint.bindPort`, controller-manager 10357,
 * scheduler 10359 on 127.0.0.1) so nothing collides while both run. The controllers elect a leader
 * through the same Lease objects as their self-hosted twins (both talk to the same etcd), so one
 * instance acts at a time; the self-hosted ones take over when the static manifests are removed.
 *
 * No probes: the pods live for minutes, the kubelet restarts a container that exits anyway, and
 * a liveness probe would only add restarts of an apiserver that is slow while etcd warms up (a
 * known kubeadm failure mode). Nothing routes traffic by their readiness either: the bootstrap's
 * wait step polls the bootstrap apiserver itself (and can say why it is not ready); the
 * controllers answer `/healthz` on their bootstrap ports for anyone who wants to check them.
 *
 * Volumes are read-only hostPaths at the same path inside the container (kubeadm's way):
 * `certificatesDir` for the apiserver and controller-manager, and only the one kubeconfig file each
 * controller needs from the distro's `secretsDir` (not the directory: on Debian that is
 * `/etc/kubernetes`, which also holds `admin.conf`, a `system:masters` credential). The apiserver
 * adds its hardening files and the audit log directory, its one writable mount
 * (./apiserver-hardening.ts).
 * @see https://kubernetes.io/docs/tasks/configure-pod-container/static-pod/
 * @see kubernetes/cmd/kubeadm/app/phases/controlplane/manifests.go
 */
import { join } from 'node:path';
import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import { kubeconfigPaths } from '../lib/k8s/endpoints.ts';
import type { ResolvedConfig } from '../lib/types.ts';
import { componentLabels, controlPlanePorts, hostPathMount, image, NAMESPACE, type ImageName, type Manifest } from './common.ts';
import { hardeningMounts } from './apiserver-hardening.ts';
import { apiServerFlags, controllerManagerFlags, schedulerFlags, type Locate } from './flags.ts';

/** A static pod and the file name the caller writes it to under `distro.paths.staticPodPath`. */
export interface StaticPodManifest {
  /** `bootstrap-<component>.yaml`. */
  file: string;
  pod: Manifest<V1Pod>;
}

/**
 * One static pod: `bootstrap-<component>` in kube-system, `hostNetwork`, system-node-critical.
 * @param mounts read-only hostPath mounts, as {@link hostPathMount} returns them.
 */
function staticPod(config: ResolvedConfig, component: ImageName, args: string[], mounts: ReturnType<typeof hostPathMount>[]): StaticPodManifest {
  const name = `bootstrap-${component}`;
  const container: V1Container = {
    name: component,
    image: image(config, component),
    imagePullPolicy: 'IfNotPresent',
    command: [component, ...args],
    volumeMounts: mounts.map((m) => m.mount),
  };
  const volumes: V1Volume[] = mounts.map((m) => m.volume);
  return {
    file: `${name}.yaml`,
    pod: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NAMESPACE, labels: componentLabels(name) },
      spec: { hostNetwork: true, priorityClassName: 'system-node-critical', containers: [container], volumes },
    },
  };
}

/**
 * The bootstrap control plane's static pods, in start order (apiserver first).
 * The apiserver serves on `bootstrapAPIEndpoint.bindPort`; the controllers use the
 * `bootstrap-controller-manager.conf` / `bootstrap-scheduler.conf` kubeconfigs (server: the
 * bootstrap apiserver) written by the `kubeconfig` step.
 * @returns `{ file, pod }` per component; `pod` is plain data (serialise it as YAML or JSON).
 * @throws ConfigError `config-invalid` if an `extraArgs` section sets a reserved flag (see `RESERVED_FLAGS`).
 */
export function bootstrapStaticPods(config: ResolvedConfig): StaticPodManifest[] {
  const ports = controlPlanePorts(config).bootstrap;
  const pki = () => hostPathMount('k8s-certs', config.certificatesDir, 'Directory');
  const at: Locate = (file) => join(config.certificatesDir, file);
  const kc = kubeconfigPaths(config);
  const cmKubeconfig = hostPathMount('kubeconfig', kc.bootstrapControllerManager, 'File');
  const schedulerKubeconfig = hostPathMount('kubeconfig', kc.bootstrapScheduler, 'File');
  return [
    staticPod(config, 'kube-apiserver', apiServerFlags(config, at, ports.apiServer, 'bootstrap'), [pki(), ...hardeningMounts(config)]),
    staticPod(config, 'kube-controller-manager', controllerManagerFlags(config, at, kc.bootstrapControllerManager, ports.controllerManager, 'bootstrap'), [pki(), cmKubeconfig]),
    staticPod(config, 'kube-scheduler', schedulerFlags(config, kc.bootstrapScheduler, ports.scheduler, 'bootstrap'), [schedulerKubeconfig]),
  ];
}
