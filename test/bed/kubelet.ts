/**
 * Turning a bed host into a node that kubeception can bootstrap: containerd configured for a host with
 * no registry and no CAP_SYS_RESOURCE, the control-plane and pause images imported, the cached kubelet
 * and kubeadm at /usr/local/bin, a kubeadm-shaped kubelet.service (disabled), and a bridge CNI config.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import process from 'node:process';
import { join } from 'node:path';
import type { Host } from './bed-host.ts';
import { CACHE_DIR, K8S_VERSION, REPO_ROOT } from './bed-host.ts';
import { runOk } from './proc.ts';
import { ensureAddonImages } from './addon-images.ts';
import type { Bind } from './state.ts';
import { KUBERNETES_MINORS, pauseImage } from '../../manifests/addons/versions.ts';
import type { RuntimeVariant } from './runtime.ts';

/**
 * The pause tags of the versions table (kubeadm's PauseVersion per minor: 3.10.1 up to 1.35, 3.10.2
 * from 1.36); all are imported into every kubelet host, so a test may name either.
 */
export const PAUSE_VERSIONS = [...new Set(Object.values(KUBERNETES_MINORS).map((m) => m.pause))].sort();
/** The sandbox image of the bed's containerd: the pause of the bed's default Kubernetes version. */
export const PAUSE_IMAGE = pauseImage('registry.k8s.io', K8S_VERSION) ?? `registry.k8s.io/pause:${PAUSE_VERSIONS[PAUSE_VERSIONS.length - 1]}`;
export const CONTROL_PLANE_IMAGES = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kube-proxy'];
/** Binaries the bed puts at /usr/local/bin in a kubelet host (bind-mounted read-only from the cache). */
export const NODE_BINARIES = ['kubelet', 'kubeadm'];

export interface KubeletHostOptions {
  /** CIDR of this host's pods for the bridge CNI; default 10.244.<last octet of the host IP>.0/24. */
  podSubnet?: string;
  /**
   * `bed` (default): the bed's bridge CNI config on `podSubnet`, for routePodSubnets. `none`: no CNI config
   * and no pod subnet (a network addon such as flannel brings both); /opt/cni/bin is then a directory of
   * links to the machine's plugins, where the addon can add its own; the addon images are imported.
   */
  cni?: 'bed' | 'none';
  /** Import the control-plane and pause images. Default true. */
  images?: boolean;
  /**
   * Kubernetes version of the node binaries (kubelet, kubeadm) and of the control-plane images, as
   * built by build-k8s.sh and images.sh. Default {@link K8S_VERSION} (`K8S_VERSION`, else kubeception's default).
   */
  version?: string;
}

const binDir = (version: string) => join(CACHE_DIR, 'k8s', version, 'bin');
const imageArchives = (version: string) => [
  ...CONTROL_PLANE_IMAGES.map((i) => join(CACHE_DIR, 'images', version, `${i}.tar`)),
  ...PAUSE_VERSIONS.map((p) => join(CACHE_DIR, 'images', `pause-${p}.tar`)),
];

/**
 * The bind mounts of the node binaries of `version`: the kubelet, and kubeadm when it was built (the
 * default version's always is; the upgrade chain's other versions build it only where a bench needs it).
 * @throws if build-k8s.sh has not produced the kubelet.
 */
export function kubeletBinds(version = K8S_VERSION): Bind[] {
  return NODE_BINARIES.flatMap((b) => {
    const src = join(binDir(version), b);
    if (!existsSync(src)) {
      if (b !== 'kubelet') return [];
      throw new Error(`bed: ${src} is missing\nfix: K8S_VERSION=${version} bash ${REPO_ROOT}/test/bed/build-k8s.sh`);
    }
    return [{ src, dst: `/usr/local/bin/${b}`, readOnly: true }];
  });
}

/** Builds the image archives of `version` if any is missing (test/bed/images.sh; cached, ≈1 s per image). */
export async function ensureImages(version = K8S_VERSION): Promise<string[]> {
  const archives = imageArchives(version);
  if (!archives.every((a) => existsSync(a))) {
    const env = { ...process.env, K8S_VERSION: version, PAUSE_VERSIONS: PAUSE_VERSIONS.join(' ') } as Record<string, string>;
    building[version] ??= runOk(['bash', join(REPO_ROOT, 'test', 'bed', 'images.sh')], { timeoutMs: 600_000, env }).finally(() => {
      delete building[version];
    });
    await building[version];
  }
  return archives;
}
const building: Record<string, Promise<string>> = {};

/**
 * containerd's config for a bed host: the CRI plugin with the systemd cgroup driver (kubelet
 * `cgroupDriver: systemd`), `restrict_oom_score_adj` (the VM lacks CAP_SYS_RESOURCE: without it every
 * pod fails with "can't get final child's PID"), no AppArmor, the pause image as sandbox image, the
 * bed's CNI dirs and the registry hosts of /etc/containerd/certs.d. containerd 2 (`bed`) reads config
 * version 3, where the CRI plugin is split into `io.containerd.cri.v1.images` and
 * `io.containerd.cri.v1.runtime` and the sandbox image is a pinned image; containerd 1.6 (`debian`)
 * reads version 2.
 * @see https://github.com/containerd/containerd/blob/main/docs/cri/config.md
 */
export const containerdConfig = (variant: RuntimeVariant = 'bed') => (variant === 'bed' ? CONTAINERD_2_CONFIG : CONTAINERD_16_CONFIG);

const CONTAINERD_2_CONFIG = `version = 3

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '${PAUSE_IMAGE}'
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = '/etc/containerd/certs.d'

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/opt/cni/bin']
    conf_dir = '/etc/cni/net.d'
`;

const CONTAINERD_16_CONFIG = `version = 2

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "/etc/containerd/certs.d"
`;

/** No registry is reachable: every pull goes to a closed port on the host's loopback and fails at once. */
export const REGISTRY_HOSTS = `server = "http://127.0.0.1:1"

[host."http://127.0.0.1:1"]
  capabilities = ["pull", "resolve"]
`;

export const KUBELET_UNIT = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target containerd.service
After=network-online.target containerd.service

[Service]
ExecStart=/usr/local/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`;

/** The kubeadm drop-in, verbatim in shape; /etc/default/kubelet may set KUBELET_EXTRA_ARGS. */
export const KUBELET_DROPIN = `[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`;

export function cniConfig(podSubnet: string): string {
  return `${JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'bed',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: { type: 'host-local', ranges: [[{ subnet: podSubnet }]], routes: [{ dst: '0.0.0.0/0' }] },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

/** What the kubeadm install docs ask of a node before `kubeadm init` (per network namespace here). */
export const NODE_SYSCTLS = `net.ipv4.ip_forward = 1
net.bridge.bridge-nf-call-iptables = 1
net.bridge.bridge-nf-call-ip6tables = 1
`;

export function defaultPodSubnet(ip: string): string {
  return `10.244.${ip.split('.')[3]}.0/24`;
}

/**
 * Prepares a booted host as a kubelet node (idempotent; the files live in the host's upper dir, so they
 * survive stop/start). Host effects: /etc/containerd/{config.toml,certs.d}, containerd enabled and
 * started, images imported into containerd's k8s.io namespace, /usr/local/bin/{kubelet,kubeadm},
 * /etc/systemd/system/kubelet.service(+.d/10-kubeadm.conf) disabled, /etc/default/kubelet,
 * /etc/cni/net.d/10-bed.conflist and /opt/cni/bin → /usr/lib/cni (with `cni: 'none'` neither: /opt/cni/bin
 * holds links to /usr/lib/cni/*, and the addon images are imported too), /etc/sysctl.d/99-kubernetes-bed.conf
 * (ip_forward and bridge-nf-call-ip(6)tables = 1, applied now and by systemd-sysctl at each boot).
 */
export async function prepareKubeletHost(host: Host, opts: KubeletHostOptions = {}): Promise<void> {
  ensureInotifyInstances();
  const cni = opts.cni ?? 'bed';
  const archives = opts.images === false ? [] : [...(await ensureImages(opts.version)), ...(cni === 'none' ? await ensureAddonImages(opts.version) : [])];
  for (const b of kubeletBinds(opts.version)) await host.bind(b);
  const podSubnet = opts.podSubnet ?? defaultPodSubnet(host.ip);
  await host.writeFile('/etc/containerd/config.toml', containerdConfig(host.runtime.containerd));
  for (const reg of ['_default', 'registry.k8s.io', 'docker.io']) {
    await host.writeFile(`/etc/containerd/certs.d/${reg}/hosts.toml`, REGISTRY_HOSTS);
  }
  await host.writeFile('/etc/systemd/system/kubelet.service', KUBELET_UNIT);
  await host.writeFile('/etc/systemd/system/kubelet.service.d/10-kubeadm.conf', KUBELET_DROPIN);
  if (!(await host.exists('/etc/default/kubelet'))) await host.writeFile('/etc/default/kubelet', 'KUBELET_EXTRA_ARGS=\n');
  if (cni === 'bed') await host.writeFile('/etc/cni/net.d/10-bed.conflist', cniConfig(podSubnet));
  await host.writeFile('/etc/sysctl.d/99-kubernetes-bed.conf', NODE_SYSCTLS);
  await host.execOk(['sysctl', '-q', '-p', '/etc/sysctl.d/99-kubernetes-bed.conf']);
  await host.execOk(['sh', '-c', cni === 'bed' ? CNI_BIN_LINK : CNI_BIN_DIR]);
  await host.execOk(['mkdir', '-p', '/etc/kubernetes/manifests', '/var/lib/kubelet']);
  await host.execOk(['systemctl', 'daemon-reload']);
  await host.execOk(['systemctl', 'enable', 'containerd.service']);
  await host.execOk(['systemctl', 'restart', 'containerd.service'], { timeoutMs: 60_000 });
  await host.execOk(['ctr', 'version'], { timeoutMs: 30_000 });
  // In parallel: ≈40 % faster than one after the other on 2 cores.
  await importImageArchives(host, archives);
  if (cni === 'bed') host.setPodSubnet(podSubnet);
}

/**
 * Imports docker-archive tarballs into the host's containerd (namespace `k8s.io`, the kubelet's),
 * `parallel` at a time (default: all at once). With the bed's containerd (v2),
 * `--discard-unpacked-layers` (which needs `--local`: the import runs in ctr, not through containerd's
 * transfer service): once unpacked into the snapshotter the layers' blobs are left to containerd's
 * garbage collector, as the CRI plugin's `discard_unpacked_layers` does for pulls — a host's disk is a
 * tmpfs, i.e. the machine's memory, and the blobs were half of it (nothing on a bed host pushes or
 * exports an image). Debian's containerd 1.6 has neither flag: a plain import there.
 */
export async function importImageArchives(host: Host, archives: readonly string[], opts: { parallel?: number; timeoutMs?: number } = {}): Promise<void> {
  const n = opts.parallel ?? Math.max(1, archives.length);
  const flags = host.runtime.containerd === 'bed' ? ['--local', '--discard-unpacked-layers'] : [];
  for (let i = 0; i < archives.length; i += n)
    await Promise.all(archives.slice(i, i + n).map((a) => host.execOk(['ctr', '-n', 'k8s.io', 'images', 'import', ...flags, a], { timeoutMs: opts.timeoutMs ?? 300_000 })));
}

/**
 * Every bed host's containerd, kubelet and systemd take inotify instances from one machine-wide budget
 * (`fs.inotify.max_user_instances`, all hosts are root in the initial user namespace), 128 by default:
 * with a dozen kubelet hosts up, containerd's CRI plugin fails to load ("failed to create fsnotify
 * watcher: too many open files") and the kubelet exits. Raise it to {@link INOTIFY_INSTANCES} (kind's advice).
 */
export const INOTIFY_INSTANCES = 1024;
function ensureInotifyInstances(): void {
  const path = '/proc/sys/fs/inotify/max_user_instances';
  if (Number(readFileSync(path, 'utf8')) < INOTIFY_INSTANCES) writeFileSync(path, `${INOTIFY_INSTANCES}\n`);
}

/** `/opt/cni/bin` → the machine's plugins (a link: nothing can be added). */
const CNI_BIN_LINK = 'mkdir -p /opt/cni && { [ -L /opt/cni/bin ] || { rm -rf /opt/cni/bin && ln -s /usr/lib/cni /opt/cni/bin; }; }';
/** `/opt/cni/bin` as a directory of links to the machine's plugins, so an addon can install its own beside them. */
const CNI_BIN_DIR = 'mkdir -p /opt/cni/bin && for f in /usr/lib/cni/*; do ln -sf "$f" /opt/cni/bin/; done';

/**
 * Routes each host's pod subnet via that host's address in every other host (what a CNI's host-gw mode
 * does), so pods reach pods and nodes across hosts. Configured from the machine with `ip -n`; sends nothing.
 */
export async function routePodSubnets(hosts: readonly Host[]): Promise<void> {
  for (const h of hosts) {
    for (const peer of hosts) {
      if (peer === h || !peer.podSubnet) continue;
      await runOk(['ip', '-n', h.netns, 'route', 'replace', peer.podSubnet, 'via', peer.ip, 'dev', 'eth0']);
    }
  }
}
