/**
 * What kubeception (and the cluster it ran on this host) may leave on a host, as data: the files and
 * directory trees it writes or its components create (*candidates*), the directories it scans for
 * foreign files, its units, processes and ports. A candidate is removed by `kubeception reset` only
 * when lib/reset/ownership.ts proves it ours (recorded, marked, or made by this cluster's
 * components); anything else is *foreign*: reported, never deleted.
 * @see kubernetes/cmd/kubeadm/app/cmd/phases/reset/cleanupnode.go (what kubeadm reset removes)
 */
import { join } from 'node:path';
import { KUBECONFIG, KUBELET_CONFIG, KUBELET_KUBECONFIG, KUBELET_SYSCTL_FILE } from '../constants.ts';
import { certSpecs, saKeyPairSpec } from '../pki/certs.ts';
import { SNAPSHOT_SERVICE, SNAPSHOT_TIMER } from '../etcd/snapshot-schedule.ts';
import { etcdDropIn } from '../etcd/config.ts';
import { hardeningPaths } from '../../manifests/apiserver-hardening.ts';
import type { ResolvedConfig } from '../types.ts';

/** Process names (`comm`, at most 15 characters) of components a kubeception host runs. */
export const OWN_PROCESSES = ['kubelet', 'kube-apiserver', 'kube-controller', 'kube-scheduler', 'kube-proxy', 'etcd', 'flanneld', 'coredns'];
/** Command-line fragments of kubeception's own processes (the join service, the recovery watcher). */
export const OWN_COMMANDS = ['kubeception.js serve-join', 'kubeception serve-join', 'recovery/watch.sh'];
/** Listening TCP ports of the components (apiservers, etcd, kubelet, controllers, kube-proxy). */
export const OWN_PORTS = [6443, 6444, 2379, 2380, 2381, 10248, 10249, 10250, 10256, 10257, 10259, 10357, 10359];
/** Network namespaces that may be pods' (containerd's CRI names them `cni-<uuid>`; so does podman's CNI): ours only if a pod of ours holds it (lib/reset/ownership.ts). */
export const CANDIDATE_NETNS = /^cni-[0-9a-f-]+$/;
/**
 * kubeception's own units (the kubelet's and etcd's unit files are the distro's: stopped and disabled
 * only): the recovery watcher, and the scheduled etcd snapshot. The snapshots and their key are kept
 * by reset (backups: remove them by hand).
 */
export { SNAPSHOT_SERVICE, SNAPSHOT_TIMER } from '../etcd/snapshot-schedule.ts';
export { RECOVERY_UNIT } from '../steps/recovery/recovery.ts';
import { RECOVERY_UNIT } from '../steps/recovery/recovery.ts';

/** A path kubeception owns: one file, or a whole directory tree (removed recursively, one file system). */
export interface OwnedPath {
  path: string;
  tree?: boolean;
}

/** The paths kubeception wrote or caused (kubelet and CNI state of this cluster's pods). */
export function ownedPaths(config: ResolvedConfig): OwnedPath[] {
  const p = config.distro.paths;
  const pki = certSpecs(config).flatMap((s) => [s.certPath, s.keyPath]);
  const sa = saKeyPairSpec(config);
  const kubelet = p.kubeletConfigDir;
  const files = [
    ...pki, sa.keyPath, sa.publicKeyPath,
    ...['crt', 'key'].map((ext) => join(config.certificatesDir, `kubeception-join.${ext}`)),
    ...Object.values(KUBECONFIG).flatMap((f) => [join(p.secretsDir, f), join(p.secretsDir, `bootstrap-${f}`)]),
    ...['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'].map((c) => join(p.staticPodPath, `bootstrap-${c}.yaml`)),
    join(p.staticPodPath, 'recovery-kube-apiserver.yaml'),
    join(kubelet, KUBELET_CONFIG), join(kubelet, KUBELET_KUBECONFIG), join(kubelet, 'bootstrap-kubeconfig'),
    ...['cpu_manager_state', 'memory_manager_state', 'dra_manager_state', 'actuated_pods_state', 'allocated_pods_state'].map((f) => join(kubelet, f)),
    join(p.systemdDir, `${config.distro.units.kubelet}.d`, '20-kubeception.conf'),
    join(p.systemdDir, RECOVERY_UNIT), etcdDropIn(config),
    join(p.systemdDir, SNAPSHOT_SERVICE), join(p.systemdDir, SNAPSHOT_TIMER),
    KUBELET_SYSCTL_FILE,
    // The apiserver's hardening files (the audit log directory is kept, as kubeadm reset keeps logs).
    ...Object.values(hardeningPaths(config)).filter((v): v is string => typeof v === 'string'),
  ];
  const trees = [
    join(p.secretsDir, 'recovery'),
    ...['pki', 'pods', 'plugins', 'plugins_registry', 'pod-resources', 'checkpoints', 'device-plugins'].map((d) => join(kubelet, d)),
    '/run/flannel', '/run/kubeception', '/var/lib/cni/flannel',
  ];
  return [...files.map((path) => ({ path })), ...trees.map((path) => ({ path, tree: true }))];
}

/** Directories scanned for files: each entry there is ours (proven: lib/reset/ownership.ts) or foreign. */
export function scannedDirs(config: ResolvedConfig): string[] {
  const p = config.distro.paths;
  return [...new Set([p.secretsDir, config.certificatesDir, join(config.certificatesDir, 'etcd'), p.staticPodPath, p.kubeletConfigDir, join(p.systemdDir, `${config.distro.units.kubelet}.d`), join(p.systemdDir, `${config.distro.units.etcd}.d`), '/etc/cni/net.d', '/var/lib/cni/networks', '/var/lib/cni/results'])];
}

/** Whether `path` (absolute) is a candidate: a listed file, or inside a listed tree. */
export function isCandidate(path: string, owned: readonly OwnedPath[]): boolean {
  return owned.some((o) => o.path === path || (o.tree && (path.startsWith(`${o.path}/`))));
}

/** Directories that are containers of our files, not files themselves: never reported as foreign. */
export function structuralDirs(config: ResolvedConfig, owned: readonly OwnedPath[]): Set<string> {
  const s = new Set([...scannedDirs(config), '/var/lib/cni']);
  for (const o of owned) if (o.tree) s.add(o.path);
  return s;
}
