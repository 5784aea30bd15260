/**
 * CRI-O of the bed's "kubic" hosts (test/bed/kubic.ts): the binaries test/bed/build-crio.sh builds from
 * the Go module proxy, and the files that configure them inside a host. conmon and runc are Debian's.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import type { Bind } from './state.ts';

/** The CRI-O the bed builds (build-crio.sh's default): the newest the Go module proxy serves (no 1.37.x). */
export const BED_CRIO_VERSION = 'v1.36.3';
/** crictl (sigs.k8s.io/cri-tools) built beside it: Debian packages no crictl. */
export const BED_CRICTL_VERSION = 'v1.37.0';
/** CRI-O's socket as Kubic's kubelet is pointed at it (distros/kubic/kubic.toml `criSocket`). */
export const CRIO_SOCKET = '/var/run/crio/crio.sock';
/** Where a kubic host keeps CRI-O's image and container storage: a dir of the host's disk tmpfs bound here (never overlayfs). */
export const CRIO_STORAGE = '/var/lib/containers';

const cache = () => process.env.KUBECEPTION_CACHE ?? '/var/cache/kubeception';
/** The directory holding crio, pinns and crictl. */
export const crioBinDir = () => join(cache(), 'crio', BED_CRIO_VERSION, 'bin');

/** Read-only binds of crio, pinns and crictl into /usr/bin (where Kubic's packages put them). @throws if not built. */
export function crioBinds(): Bind[] {
  return ['crio', 'pinns', 'crictl'].map((b) => {
    const src = join(crioBinDir(), b);
    if (!existsSync(src)) throw new Error(`bed: ${src} is missing\nfix: bash test/bed/build-crio.sh`);
    return { src, dst: `/usr/bin/${b}`, readOnly: true };
  });
}

/** The runc wrapper's path inside a kubic host (part of its read-only /usr: written before first boot). */
export const RUNC_WRAPPER = '/usr/local/lib/kubeception-bed/runc';

/**
 * CRI-O's config for a bed host (`/etc/crio/crio.conf`): storage on overlay under {@link CRIO_STORAGE},
 * the systemd cgroup manager (the kubelet's `cgroupDriver: systemd`: kubeception reads
 * `cgroup_manager` from this file), conmon and runc from Debian with runc through {@link RUNC_WRAPPER},
 * pinns from the build, the sandbox image, the CNI dirs, no seccomp or AppArmor default profile
 * (no AppArmor in the build; the kubelet asks for RuntimeDefault where a pod wants it).
 * `internal_repair`: after a power cut CRI-O checks its storage instead of wiping the images, which no
 * registry could bring back here.
 * @see https://github.com/cri-o/cri-o/blob/main/docs/crio.conf.5.md
 */
export function crioConfig(pauseImage: string): string {
  return `# Written by the kubeception bed (test/bed/crio.ts).
[crio]
root = "${CRIO_STORAGE}/storage"
runroot = "/run/containers/storage"
storage_driver = "overlay"
clean_shutdown_file = "/var/lib/crio/clean.shutdown"
internal_wipe = true
internal_repair = true

[crio.api]
listen = "${CRIO_SOCKET}"

[crio.runtime]
default_runtime = "runc"
cgroup_manager = "systemd"
pinns_path = "/usr/bin/pinns"
apparmor_profile = ""
selinux = false

[crio.runtime.runtimes.runc]
runtime_path = "${RUNC_WRAPPER}"
runtime_type = "oci"
runtime_root = "/run/runc"
monitor_path = "/usr/bin/conmon"
monitor_cgroup = "pod"

[crio.image]
pause_image = "${pauseImage}"
signature_policy = "/etc/crio/policy.json"

[crio.network]
network_dir = "/etc/cni/net.d/"
plugin_dirs = ["/opt/cni/bin/"]
`;
}

/** Accept any image (there are only locally imported ones): CRI-O's own signature policy file. */
export const CRIO_POLICY = `${JSON.stringify({ default: [{ type: 'insecureAcceptAnything' }] }, null, 2)}\n`;

/**
 * No registry is reachable: every registry an image of the bed names is blocked, so a pull fails at
 * once instead of waiting on a network that is not there (containerd's hosts files to 127.0.0.1:1 do
 * the same for the other hosts).
 */
export const REGISTRIES_CONF = `# Written by the kubeception bed: no registry is reachable from a bed host.
unqualified-search-registries = []
${['registry.k8s.io', 'docker.io', 'ghcr.io', 'quay.io', 'localhost'].map((r) => `\n[[registry]]\nlocation = "${r}"\nblocked = true\n`).join('')}`;

/** containers/storage for tools beside CRI-O (skopeo's image import): the same store CRI-O uses. */
export const STORAGE_CONF = `# Written by the kubeception bed.
[storage]
driver = "overlay"
graphroot = "${CRIO_STORAGE}/storage"
runroot = "/run/containers/storage"
`;

/** Capability names by bit number (linux/capability.h, 0–40), for the runc wrapper's bounding-set clamp. */
const CAP_NAMES = ['CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP', 'LINUX_IMMUTABLE', 'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_ADMIN', 'NET_RAW', 'IPC_LOCK', 'IPC_OWNER', 'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT', 'SYS_PTRACE', 'SYS_PACCT', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_NICE', 'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'MKNOD', 'LEASE', 'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP', 'MAC_OVERRIDE', 'MAC_ADMIN', 'SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ', 'PERFMON', 'BPF', 'CHECKPOINT_RESTORE'];

/**
 * The bed's runc for CRI-O. The VM lacks CAP_SYS_RESOURCE (and a bed host has only the capabilities
 * the VM has), and CRI-O, unlike containerd, has no setting for either consequence:
 * - no process here may lower its oom_score_adj, and runc fails a container whose spec asks for less
 *   than the caller has (the kubelet asks -997 for critical pods, CRI-O -998 for every infra container):
 *   the wrapper raises such a value to the caller's own, as containerd's `restrict_oom_score_adj` does;
 * - a privileged container gets every capability the kernel knows, and runc fails with "unable to apply
 *   caps" on one outside its own bounding set: the wrapper keeps only the caller's bounding set, which is
 *   what containerd grants a privileged container (its own capabilities).
 * Then it execs Debian's runc. Only bed hosts run this: a real node has the capabilities.
 */
export const RUNC_WRAPPER_SCRIPT = `#!/bin/sh
# kubeception bed: fit the OCI spec to what this process may grant (no CAP_SYS_RESOURCE on the VM):
# oomScoreAdj no lower than ours, capabilities within our bounding set; then exec Debian's runc.
bundle= prev=
for a in "$@"; do
  case "$prev" in --bundle|-b) bundle=$a ;; esac
  case "$a" in --bundle=*) bundle=\${a#--bundle=} ;; esac
  prev=$a
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
  min=$(cat /proc/self/oom_score_adj)
  bnd=$(( 0x$(awk '/^CapBnd:/ { print $2 }' /proc/self/status) ))
  jq --argjson min "$min" --argjson bnd "$bnd" --argjson names '${JSON.stringify(CAP_NAMES)}' '
    def held: [range(0; $names | length) | select((($bnd / pow(2; .)) | floor) % 2 == 1) | "CAP_" + $names[.]];
    held as $held
    | if (.process.oomScoreAdj // 0) < $min then .process.oomScoreAdj = $min else . end
    | if .process.capabilities then .process.capabilities |= with_entries(.value |= map(select(. as $c | $held | index($c)))) else . end
  ' "$bundle/config.json" > "$bundle/.config.json.bed" && mv "$bundle/.config.json.bed" "$bundle/config.json"
fi
exec /usr/sbin/runc "$@"
`;

/** CRI-O's unit as its package installs it (contrib/systemd/crio.service of the release, binary in /usr/bin). */
export const CRIO_UNIT = `[Unit]
Description=Container Runtime Interface for OCI (CRI-O)
Documentation=https://github.com/cri-o/cri-o
Wants=network-online.target
Before=kubelet.service
After=network-online.target

[Service]
Type=notify
EnvironmentFile=-/etc/sysconfig/crio
Environment=GOTRACEBACK=crash
ExecStart=/usr/bin/crio $CRIO_CONFIG_OPTIONS $CRIO_RUNTIME_OPTIONS $CRIO_STORAGE_OPTIONS $CRIO_NETWORK_OPTIONS $CRIO_METRICS_OPTIONS
ExecReload=/bin/kill -s HUP $MAINPID
TasksMax=infinity
LimitNPROC=1048576
LimitCORE=infinity
OOMScoreAdjust=-999
TimeoutStartSec=0
Restart=on-failure
RestartSec=10
WatchdogSec=60s

[Install]
WantedBy=multi-user.target
Alias=cri-o.service
`;
