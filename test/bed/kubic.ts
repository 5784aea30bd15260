/**
 * The bed's "kubic" host flavour: a host shaped like openSUSE Kubic (MicroOS), the system
 * distros/kubic describes, so that `kubeception run bootstrap --distro kubic` runs where its settings
 * are true:
 * - `/usr` is read-only (a transactional system changes it only by a new snapshot and a reboot): the
 *   host's init binds it onto itself read-only (test/bed/init.sh). Everything a package would put under
 *   /usr is there before the first boot: in the overlay's upper dir, or bound from the cache.
 * - CRI-O instead of containerd: crio, pinns and crictl at /usr/bin (test/bed/build-crio.sh), Debian's
 *   conmon and runc, its unit `crio.service`, socket /var/run/crio/crio.sock, storage under
 *   /var/lib/containers on the host's disk tmpfs (overlay storage must not sit on overlayfs); the pause,
 *   control-plane and addon images copied into that storage with skopeo (containers-storage transport).
 * - the kubelet where Kubic's package installs it: /usr/bin/kubelet, its unit in /usr/lib/systemd/system.
 * - etcd configured through /etc/sysconfig/etcd: the host's etcd.service reads that file (and not
 *   Debian's /etc/default/etcd).
 * - cgroup driver systemd in CRI-O (`cgroup_manager`), which kubeception reads and gives the kubelet.
 *
 * Files and binds are set when the host is created; {@link prepareKubicHost} configures and starts
 * CRI-O once it runs. `/usr/sbin/transactional-update` is a stand-in ({@link TRANSACTIONAL_UPDATE})
 * that knows `pkg install kubernetes<X.Y>-kubelet`: the next boot binds the newest cached kubelet of that
 * minor over /usr/bin/kubelet (init.sh), as a reboot into a new snapshot would.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Host } from './bed-host.ts';
import { CACHE_DIR, K8S_VERSION } from './bed-host.ts';
import { crioBinds, CRIO_POLICY, CRIO_SOCKET, crioConfig, CRIO_STORAGE, CRIO_UNIT, REGISTRIES_CONF, RUNC_WRAPPER, RUNC_WRAPPER_SCRIPT, STORAGE_CONF } from './crio.ts';
import { ensureAddonImages } from './addon-images.ts';
import { cniConfig, defaultPodSubnet, ensureImages, NODE_SYSCTLS, PAUSE_IMAGE } from './kubelet.ts';
import { runOk } from './proc.ts';
import { type Bind, diskDir } from './state.ts';

export type Flavour = 'debian' | 'kubic';

/** Kubic's kubelet binary (package kubernetes-kubelet). */
export const KUBIC_KUBELET = '/usr/bin/kubelet';
/** The file Kubic's etcd.service reads its environment from (distros/kubic/kubic.toml `etcdEnvironmentFile`). */
export const KUBIC_ETCD_ENV = '/etc/sysconfig/etcd';
/** The flag init.sh looks for to make /usr read-only. */
export const READ_ONLY_USR_FLAG = '/usr/local/lib/kubeception-bed/read-only-usr';

/** Kubic's etcd unit (openSUSE's etcd package): the environment from /etc/sysconfig/etcd. */
export const KUBIC_ETCD_UNIT = `[Unit]
Description=etcd
After=network-online.target
Wants=network-online.target

[Service]
Type=notify
User=etcd
EnvironmentFile=-${KUBIC_ETCD_ENV}
ExecStart=/usr/bin/etcd
Restart=on-failure
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
`;

/** Kubic's kubelet unit and kubeadm drop-in (openSUSE's kubernetes-kubelet / -kubeadm packages, in /usr). */
export const KUBIC_KUBELET_UNIT = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target crio.service
After=network-online.target crio.service

[Service]
EnvironmentFile=-/etc/sysconfig/kubelet
ExecStart=${KUBIC_KUBELET} $KUBELET_EXTRA_ARGS
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`;

/**
 * The bed's stand-in for MicroOS's `transactional-update` (/usr/sbin/transactional-update in a kubic
 * host): only `[--non-interactive] pkg install kubernetes<X.Y>-kubelet`, which records the newest
 * kubelet of that minor in the cache (`/var/cache/kubeception/k8s/v<X.Y>.*\/bin/kubelet`) as the next
 * snapshot's /usr/bin/kubelet (/var/lib/kubeception-bed/snapshot/kubelet); init.sh applies it at the
 * next boot. Exit 104 (zypper's "not found") when no such kubelet is built.
 */
export const TRANSACTIONAL_UPDATE = `#!/bin/sh
# kubeception bed: a stand-in for transactional-update (see test/bed/kubic.ts).
set -eu
[ "\${1:-}" = --non-interactive ] && shift
if [ "\${1:-}" != pkg ] || [ "\${2:-}" != install ] || [ $# -ne 3 ]; then
  echo "transactional-update (kubeception bed stand-in): only 'pkg install kubernetes<X.Y>-kubelet'" >&2; exit 1
fi
minor=$(echo "$3" | sed -n 's/^kubernetes\\([0-9]*\\.[0-9]*\\)-kubelet$/\\1/p')
bin=
[ -n "$minor" ] && bin=$(ls -d ${CACHE_DIR}/k8s/v"$minor".*/bin/kubelet 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "Package '$3' not found." >&2; exit 104; }
mkdir -p /var/lib/kubeception-bed/snapshot
printf '%s\n' "$bin" > /var/lib/kubeception-bed/snapshot/kubelet
echo "New snapshot: /usr/bin/kubelet is $bin ($("$bin" --version)). Please reboot your machine to activate the changes."
`;

/** The kubelet binary of `version` as a bind to {@link KUBIC_KUBELET}. */
export function kubicKubeletBind(version = K8S_VERSION): Bind {
  return { src: join(CACHE_DIR, 'k8s', version, 'bin', 'kubelet'), dst: KUBIC_KUBELET, readOnly: true };
}

/** The binds of a kubic host: CRI-O's binaries, the kubelet, CRI-O's storage dir on the host's disk. @throws if CRI-O is not built. */
export function kubicBinds(name: string, kubeletVersion?: string): Bind[] {
  const storage = join(diskDir(name), 'containers');
  mkdirSync(storage, { recursive: true });
  return [...crioBinds(), kubicKubeletBind(kubeletVersion), { src: storage, dst: CRIO_STORAGE }];
}

/** Writes what a Kubic image has under /usr (and /etc) into the upper dir of a host not yet booted. */
export function writeKubicUpper(name: string): void {
  const upper = join(diskDir(name), 'upper');
  const put = (path: string, content: string, mode = 0o644) => {
    mkdirSync(dirname(`${upper}${path}`), { recursive: true });
    writeFileSync(`${upper}${path}`, content, { mode });
  };
  put(READ_ONLY_USR_FLAG, '');
  put(RUNC_WRAPPER, RUNC_WRAPPER_SCRIPT, 0o755);
  put('/usr/lib/systemd/system/crio.service', CRIO_UNIT);
  put('/usr/lib/systemd/system/etcd.service', KUBIC_ETCD_UNIT);
  put('/usr/lib/systemd/system/kubelet.service', KUBIC_KUBELET_UNIT);
  put('/usr/sbin/transactional-update', TRANSACTIONAL_UPDATE, 0o755);
  put('/etc/sysconfig/kubelet', 'KUBELET_EXTRA_ARGS=\n');
  // A system with a kernel has /usr/lib/modules (kube-proxy mounts /lib/modules); this VM has none, and
  // on a read-only /usr the runtime cannot create the missing host path (containerd does elsewhere).
  mkdirSync(`${upper}/usr/lib/modules`, { recursive: true });
  mkdirSync(`${upper}/etc/sysconfig`, { recursive: true });
}

export interface KubicHostOptions {
  /** `bed`: the bridge CNI on the host's pod subnet (routePodSubnets); `none` (default): a network addon (flannel) brings it. */
  cni?: 'bed' | 'none';
  /** Kubernetes version of the kubelet; its images are imported beside the bed's version's. Default {@link K8S_VERSION}. */
  version?: string;
  /** Import the control-plane, pause (and with `cni: 'none'` the addon) images. Default true. */
  images?: boolean;
}

/** The name a docker-archive carries (its manifest.json's first RepoTag). */
async function archiveRef(archive: string): Promise<string> {
  const manifest = JSON.parse(await runOk(['tar', '-xOf', archive, 'manifest.json'])) as { RepoTags?: string[] }[];
  const ref = manifest[0]?.RepoTags?.[0];
  if (!ref) throw new Error(`bed: ${archive} names no image (manifest.json has no RepoTags)`);
  return ref;
}

/**
 * Prepares a booted kubic host as a node (idempotent): /etc/crio/crio.conf and policy.json,
 * /etc/containers/{registries.conf,storage.conf}, /etc/crictl.yaml (cri-tools' file), the images copied into CRI-O's storage (before CRI-O
 * starts, so only one process writes the store), the CNI (bridge config, or /opt/cni/bin as links for
 * flannel), sysctls, /etc/kubernetes/manifests; then crio.service enabled and started, and `crictl
 * images` answering.
 */
export async function prepareKubicHost(host: Host, opts: KubicHostOptions = {}): Promise<void> {
  const cni = opts.cni ?? 'none';
  // The bed's version's images (a worker with an older kubelet runs the cluster's kube-proxy) and the
  // kubelet's version's control-plane images; the addons of the bed's version.
  const versions = [...new Set([K8S_VERSION, opts.version ?? K8S_VERSION])];
  const archives = opts.images === false ? [] : [...new Set([...(await Promise.all(versions.map((v) => ensureImages(v)))).flat(), ...(cni === 'none' ? await ensureAddonImages() : [])])];
  await host.writeFile('/etc/crio/crio.conf', crioConfig(PAUSE_IMAGE));
  await host.writeFile('/etc/crio/policy.json', CRIO_POLICY);
  await host.writeFile('/etc/containers/registries.conf', REGISTRIES_CONF);
  await host.writeFile('/etc/containers/storage.conf', STORAGE_CONF);
  await host.writeFile('/etc/crictl.yaml', `runtime-endpoint: unix://${CRIO_SOCKET}\nimage-endpoint: unix://${CRIO_SOCKET}\n`);
  if (cni === 'bed') await host.writeFile('/etc/cni/net.d/10-bed.conflist', cniConfig(defaultPodSubnet(host.ip)));
  await host.writeFile('/etc/sysctl.d/99-kubernetes-bed.conf', NODE_SYSCTLS);
  await host.execOk(['sysctl', '-q', '-p', '/etc/sysctl.d/99-kubernetes-bed.conf']);
  await host.execOk(['sh', '-c', 'mkdir -p /opt/cni/bin && for f in /usr/lib/cni/*; do ln -sf "$f" /opt/cni/bin/; done']);
  await host.execOk(['mkdir', '-p', '/etc/kubernetes/manifests', '/var/lib/kubelet']);
  const have = new Set(await storedImages(host));
  for (const a of archives) if (!have.has(await archiveRef(a))) await importArchive(host, a);
  await host.execOk(['systemctl', 'daemon-reload']);
  await host.execOk(['systemctl', 'enable', 'crio.service']);
  await host.execOk(['systemctl', 'restart', 'crio.service'], { timeoutMs: 120_000 });
  await host.execOk(['crictl', '--runtime-endpoint', 'unix:///var/run/crio/crio.sock', 'images'], { timeoutMs: 30_000 });
  if (cni === 'bed') host.setPodSubnet(defaultPodSubnet(host.ip));
}

/**
 * Copies a docker-archive (on the machine, visible in the host through the cache bind) into CRI-O's
 * storage under the name it carries: `skopeo copy docker-archive:… containers-storage:<name>`. Works
 * while CRI-O runs (containers/storage locks the store); CRI-O lists the image at once.
 */
export async function importArchive(host: Host, archive: string): Promise<void> {
  const ref = await archiveRef(archive);
  await host.execOk(['skopeo', 'copy', '--quiet', `docker-archive:${archive}`, `containers-storage:${ref}`], { timeoutMs: 300_000 });
}

/** Image names in CRI-O's storage, read with crictl while CRI-O runs, else none (a fresh host). */
async function storedImages(host: Host): Promise<string[]> {
  const r = await host.exec(['crictl', '--runtime-endpoint', 'unix:///var/run/crio/crio.sock', 'images', '-o', 'json'], { timeoutMs: 30_000 });
  if (r.code !== 0) return [];
  return ((JSON.parse(r.stdout) as { images?: { repoTags?: string[] }[] }).images ?? []).flatMap((i) => i.repoTags ?? []);
}
