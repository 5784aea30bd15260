/**
 * The recovery watcher: a POSIX shell loop run by the systemd unit `kubeception-recovery.service`,
 * so it starts at boot with no kubeception command and costs a sleeping `sh` (≈1 MB) between probes.
 *
 * Every `intervalS` seconds, unless a bootstrap is in progress (a `bootstrap-*.yaml` in
 * `staticPodPath`: the bootstrap owns the control plane then):
 * - **activate** — when this node's apiserver has not answered `/readyz` (local probe, `--cacert`
 *   the cluster CA; 200, or 401/403 when anonymous auth is off, count as serving) `failsBeforeRecovery`
 *   times in a row and the container runtime runs no `kube-apiserver` container (`ctr -n k8s.io`:
 *   containers labelled `io.kubernetes.container.name=kube-apiserver` with a RUNNING task), or it has
 *   not answered for `hungAfterS` seconds whatever runs: copy the last-known-good manifest into
 *   `staticPodPath` (temp dot-file + rename; the kubelet ignores dot-files);
 * - **hand back** — while the recovery pod is active, once a self-hosted `kube-apiserver-*` pod's
 *   container runs, listens on `bindPort` (its sockets in `/proc/<pid>/net/tcp{,6}`), and `/readyz`
 *   answered `readyInARow` times in a row (each probe a new connection, spread by SO_REUSEPORT over
 *   both instances): remove the manifest; the kubelet stops the recovery pod.
 * Decisions never read API objects: they can be stale exactly when this matters.
 * Log lines go to the journal (`journalctl -u kubeception-recovery`).
 */

/** Everything the script needs, as absolute host paths and numbers. */
export interface WatcherSettings {
  /** The last-known-good recovery manifest (outside `staticPodPath`). */
  lkgManifest: string;
  /** The kubelet's `staticPodPath`. */
  staticPodPath: string;
  /** File name of the active copy inside `staticPodPath`. */
  activeFile: string;
  /** `https://<host>:<port>/readyz` of this node's apiserver. */
  readyzUrl: string;
  /** The cluster CA that signed the apiserver's serving certificate. */
  caFile: string;
  /** `bindPort`. */
  port: number;
  /** The container runtime's socket path (from `criSocket`). */
  containerdSocket: string;
  /**
   * How the script asks the runtime which kube-apiserver containers run: `containerd` (default) with
   * `ctr -n k8s.io`; `cri` with `crictl` over the CRI (CRI-O). A CRI runtime forgets the containers of
   * the last boot itself (CRI-O wipes them when its /run version file is gone), so the boot cleanup
   * only activates the recovery pod there.
   */
  runtime?: 'containerd' | 'cri';
  /** Flag file in /run: the boot cleanup ran in this boot (also written at install, so it never runs on a live node). */
  bootFlag: string;
  /** Seconds between probes (default 2; fractions work with GNU sleep). */
  intervalS?: number;
  failsBeforeRecovery?: number;
  readyInARow?: number;
  hungAfterS?: number;
}

/** Single-quotes a value for sh. */
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

// Shell: "<container id> <pid>" of each kube-apiserver container with a RUNNING task whose pod name matches $1.
const CONTAINERD_APISERVERS = `# "<container id> <pid>" of each kube-apiserver container with a RUNNING task whose pod name matches $1.
apiservers() {
  ids=$(ctr --address "$SOCK" -n k8s.io containers ls -q "labels.\\"io.kubernetes.container.name\\"==kube-apiserver,labels.\\"io.kubernetes.pod.name\\"~=\\"$1\\"" 2>/dev/null | tr '\\n' ' ') || return 0
  [ -n "$ids" ] || return 0
  ctr --address "$SOCK" -n k8s.io tasks ls 2>/dev/null |
    awk -v ids="$ids" 'BEGIN { n = split(ids, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 } $3 == "RUNNING" && ($1 in want) { print $1, $2 }'
}
`;
// The same through the CRI (crictl): running containers named kube-apiserver, their pid and pod name.
const CRI_APISERVERS = `# "<container id> <pid>" of each running kube-apiserver container (crictl) whose pod name matches $1.
apiservers() {
  for id in $(timeout 20 crictl --runtime-endpoint "unix://$SOCK" ps -q --state running --name '^kube-apiserver$' 2>/dev/null); do
    timeout 10 crictl --runtime-endpoint "unix://$SOCK" inspect -o go-template --template '{{.info.pid}} {{index .status.labels "io.kubernetes.pod.name"}}' "$id" 2>/dev/null |
      awk -v id="$id" -v re="$1" 'NF == 2 && $2 ~ re { print id, $1 }'
  done
}
`;
const CONTAINERD_BOOT_CLEANUP = `  running=$(timeout 20 ctr --address "$SOCK" -n k8s.io tasks ls 2>/dev/null | awk '$3 == "RUNNING" { print $1 }')
  n=0
  for id in $(timeout 20 ctr --address "$SOCK" -n k8s.io containers ls -q 2>/dev/null); do
    echo "$running" | grep -qxF "$id" && continue
    timeout 10 ctr --address "$SOCK" -n k8s.io tasks delete "$id" >/dev/null 2>&1
    timeout 10 ctr --address "$SOCK" -n k8s.io containers delete "$id" >/dev/null 2>&1 && n=$((n + 1))
  done
  log "boot: removed $n record(s) of dead containers of the last boot"
`;
const CRI_BOOT_CLEANUP = `  log "boot: the container runtime (CRI) removes the containers of the last boot itself"
`;

/** The watcher script (text, run with `/bin/sh`). */
export function recoveryWatcherScript(w: WatcherSettings): string {
  const interval = w.intervalS ?? 2;
  return `#!/bin/sh
# Written by kubeception: the kube-apiserver recovery watcher (kubeception-recovery.service).
# Rewritten by every \`kubeception run bootstrap\`; removed by \`kubeception reset\`.
set -u
LKG=${q(w.lkgManifest)}
STATIC=${q(w.staticPodPath)}
ACTIVE="$STATIC"/${q(w.activeFile)}
URL=${q(w.readyzUrl)}
CA=${q(w.caFile)}
PORT=${w.port}
SOCK=${q(w.containerdSocket)}
INTERVAL=${interval}
FAILS=${w.failsBeforeRecovery ?? 3}
IN_A_ROW=${w.readyInARow ?? 10}
HUNG=${Math.ceil((w.hungAfterS ?? 90) / interval)}

log() { echo "kubeception-recovery: $*"; }
serving() {
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$CA" "$URL" 2>/dev/null)
  case "$code" in 200|401|403) return 0 ;; *) return 1 ;; esac
}
${w.runtime === 'cri' ? CRI_APISERVERS : CONTAINERD_APISERVERS}# True if process $1 holds a listening TCP socket on $PORT.
listens() {
  inodes=$(ls -l /proc/"$1"/fd 2>/dev/null | sed -n 's/.*socket:\\[\\([0-9]*\\)\\].*/\\1/p')
  [ -n "$inodes" ] || return 1
  hex=$(printf '%04X' "$PORT")
  cat /proc/"$1"/net/tcp /proc/"$1"/net/tcp6 2>/dev/null |
    awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' | grep -qxF "$inodes"
}
self_hosted_listening() {
  for pid in $(apiservers '^kube-apiserver-' | awk '{ print $2 }'); do listens "$pid" && return 0; done
  return 1
}

# ExecStartPre, once per boot (the flag lives in /run): after a power cut containerd still holds the
# records of every container of the last boot, and the kubelet takes minutes over them before it
# starts pods; none can be running, so remove the records of those without a RUNNING task. Then
# activate the recovery pod at once.
if [ "\${1:-}" = boot-cleanup ]; then
  [ -e ${q(w.bootFlag)} ] && exit 0
  mkdir -p "$(dirname ${q(w.bootFlag)})" && : > ${q(w.bootFlag)}
${w.runtime === 'cri' ? CRI_BOOT_CLEANUP : CONTAINERD_BOOT_CLEANUP}  # Nothing runs at boot, and the self-hosted apiserver can only come back through an apiserver:
  # hand the kubelet the recovery pod before it starts (unless a bootstrap owns the control plane).
  if [ -f "$LKG" ] && ! ls "$STATIC"/bootstrap-*.yaml >/dev/null 2>&1 && cp "$LKG" "$STATIC/.recovery.tmp" && mv "$STATIC/.recovery.tmp" "$ACTIVE"; then
    log "activated: at boot, before the kubelet starts"
  fi
  exit 0
fi

fails=0
streak=0
log "watching $URL (recovery manifest $LKG)"
while :; do
  sleep "$INTERVAL"
  if ls "$STATIC"/bootstrap-*.yaml >/dev/null 2>&1; then fails=0; streak=0; continue; fi
  [ -f "$LKG" ] || continue
  if [ -f "$ACTIVE" ]; then
    if serving && self_hosted_listening; then streak=$((streak + 1)); else streak=0; fi
    if [ "$streak" -ge "$IN_A_ROW" ]; then
      rm -f "$ACTIVE" && log "hand-back: the self-hosted kube-apiserver serves; removed $ACTIVE"
      streak=0
      fails=0
    fi
    continue
  fi
  if serving; then fails=0; continue; fi
  fails=$((fails + 1))
  [ "$fails" -ge "$FAILS" ] || continue
  running=$(apiservers .)
  if [ -n "$running" ] && [ "$fails" -lt "$HUNG" ]; then continue; fi
  if cp "$LKG" "$STATIC/.recovery.tmp" && mv "$STATIC/.recovery.tmp" "$ACTIVE"; then
    log "activated: $URL not serving for $fails probes, $( [ -n "$running" ] && echo 'a kube-apiserver container runs but does not serve' || echo 'no kube-apiserver container runs')"
  fi
done
`;
}

/** The PATH the watcher runs with: system directories only (never /usr/local, never the caller's). */
export const WATCHER_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';

/** Variables a kubeception run may hold that carry secrets or change behaviour: never passed to the watcher. */
export const WATCHER_UNSET_ENV = ['KUBECEPTION_TOKEN', 'KUBECEPTION_CERTIFICATE_KEY', 'KUBECEPTION_CRASH_AT', 'KUBECEPTION_FROM_SOURCE'];

/** Inputs of {@link recoveryWatcherUnit}. */
export interface WatcherUnitInput {
  /** Absolute path of the watcher script. */
  script: string;
  /** Units to order after (the container runtime) and before (the kubelet). */
  after: string[];
  before: string[];
  /** The only path outside /run the watcher may write: the kubelet's `staticPodPath` (the active copy and its temp file). */
  readWritePaths: string[];
  /**
   * Name of its directory in /run (its boot flag lives there): created by systemd at start, writable,
   * kept when the watcher stops (`RuntimeDirectoryPreserve`; a boot clears /run anyway).
   */
  runtimeDirectory: string;
}

/**
 * The systemd unit that runs the watcher from boot on, sandboxed to what it does: it reads the
 * recovery files, the CA, /proc and containerd's socket, runs curl and ctr, and writes only
 * `readWritePaths` and its `/run/<runtimeDirectory>`. `ProtectSystem=strict` (everything else read-only), `ProtectHome`, `PrivateTmp`,
 * `PrivateDevices`, `NoNewPrivileges`; the capability bounding set is `CAP_SYS_PTRACE` alone (to read
 * the `/proc/<pid>/fd` links of the kube-apiserver container's process, whose capabilities are not
 * a subset of the watcher's; the files it touches are root's, so no DAC override is needed); only
 * unix and IP sockets; `@system-service` system calls only; a fixed PATH ({@link WATCHER_PATH}) and no kubeception variable
 * ({@link WATCHER_UNSET_ENV}) from the manager's environment.
 * @see https://www.freedesktop.org/software/systemd/man/latest/systemd.exec.html
 */
export function recoveryWatcherUnit(p: WatcherUnitInput): string {
  return `# Written by kubeception.
[Unit]
Description=kubeception: restore this node's kube-apiserver from its last-known-good static pod when none serves
After=${p.after.join(' ')}
Before=${p.before.join(' ')}

[Service]
ExecStartPre=/bin/sh ${p.script} boot-cleanup
TimeoutStartSec=90
ExecStart=/bin/sh ${p.script}
Restart=always
RestartSec=2
MemoryMax=64M
Environment=PATH=${WATCHER_PATH} LC_ALL=C
UnsetEnvironment=${WATCHER_UNSET_ENV.join(' ')}
NoNewPrivileges=yes
CapabilityBoundingSet=CAP_SYS_PTRACE
AmbientCapabilities=
ProtectSystem=strict
ReadWritePaths=${p.readWritePaths.map((d) => `-${d}`).join(' ')}
RuntimeDirectory=${p.runtimeDirectory}
RuntimeDirectoryPreserve=yes
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
RestrictNamespaces=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
LockPersonality=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
UMask=0077

[Install]
WantedBy=multi-user.target
`;
}
