#!/usr/bin/env bash
# Sets up a fresh machine for kubeception's test bed: Debian packages, npm dependencies, the Kubernetes
# binaries, etcd, containerd and the addon binaries (CoreDNS, flannel, the flannel CNI plugin) built from the Go module proxy,
# and the OCI images (all cached under ${KUBECEPTION_CACHE:-/var/cache/kubeception}, keyed by version).
# Idempotent; run as root. Cold: 13.5 min measured on 2 cores (Kubernetes 567 s, addons 200 s, images 22 s);
# warm: seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

# --- Debian packages (idempotent: installs only what is missing) -------------------------------------------
PACKAGES=(systemd-container etcd-server etcd-client containerd runc containernetworking-plugins umoci skopeo
  debootstrap iproute2 dbus jq iputils-ping curl busybox-static haproxy
  bind9-dnsutils netcat-openbsd # dig and nc for the conformance images (test/bed/conformance-images.sh)
  gcc make libc6-dev bzip2 # upstream BusyBox for the conformance images (test/bed/build-busybox.sh)
  libseccomp-dev pkg-config conmon) # CRI-O of the kubic hosts: cgo against libseccomp, Debian's conmon (test/bed/build-crio.sh)
step "apt packages"
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  # No daemon (etcd, containerd) may start on the machine itself: only inside bed hosts.
  created_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d && created_policy=1
  fi
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  if ((created_policy)); then rm -f /usr/sbin/policy-rc.d; fi
else
  echo "all installed"
fi

# --- inotify limits: every bed host runs its own systemd, journald, dbus, containerd and kubelet, all as
# root, so they share root's per-user inotify budget (instances and watches) machine-wide. Debian's 128
# instances ran out with a few hosts (a rebooted host's containerd could not load its CRI plugin: "too
# many open files"). Sized for ≈8 hosts with headroom; only ever raised, never lowered.
step "inotify limits"
raise_sysctl() { # raise_sysctl <key> <minimum>
  local cur; cur=$(sysctl -n "$1")
  if ((cur < $2)); then sysctl -q -w "$1=$2" && echo "$1: raised $cur → $2"; else echo "$1: $cur (≥ $2, kept)"; fi
}
raise_sysctl fs.inotify.max_user_instances 1024
raise_sysctl fs.inotify.max_user_watches 524288

step "npm ci"
npm ci --no-audit --no-fund

step "kubernetes binaries (cached in ${KUBECEPTION_CACHE:-/var/cache/kubeception})"
start=$SECONDS
bash test/bed/build-k8s.sh
echo "binaries ready in $((SECONDS - start)) s"

# The upgrade chain's Kubernetes module sources (only the download, seconds): the version-pins test
# (test/integration/addon-versions.test.ts, in `npm test`) reads kubeadm's constants of every version,
# and the chain's builds run beside `npm test` in CI (.ci/run), too late for it on a cold cache.
step "kubernetes module sources of the upgrade chain (for the version-pins test)"
chain=$(sed -n 's/^K8S_UPGRADE_CHAIN="\${K8S_UPGRADE_CHAIN:-\([^}]*\)}"$/\1/p' test/bed/setup-upgrade.sh)
[[ -n $chain ]] || { echo "no K8S_UPGRADE_CHAIN default in test/bed/setup-upgrade.sh" >&2; exit 1; }
for v in $chain; do
  (cd /tmp && GOMODCACHE="${GOMODCACHE:-${KUBECEPTION_CACHE:-/var/cache/kubeception}/go/mod}" GOTOOLCHAIN=local GOFLAGS=-mod=mod "${GO:-$(command -v go || echo /usr/local/go/bin/go)}" mod download "k8s.io/kubernetes@$v")
done
echo "k8s.io/kubernetes sources: $chain"

step "etcd (the bed's default, over Debian's: test/bed/runtime.ts; cached)"
start=$SECONDS
bash test/bed/build-etcd.sh
echo "etcd ready in $((SECONDS - start)) s"

step "containerd 2 (the bed's default runtime, over Debian's: test/bed/runtime.ts; cached)"
start=$SECONDS
bash test/bed/build-containerd.sh
echo "containerd ready in $((SECONDS - start)) s"

step "CRI-O and crictl (the runtime of the bed's kubic hosts: test/bed/kubic.ts; cached)"
start=$SECONDS
bash test/bed/build-crio.sh
echo "CRI-O ready in $((SECONDS - start)) s"

step "addon binaries: CoreDNS, flannel, flannel CNI plugin (cached)"
start=$SECONDS
bash test/bed/build-addons.sh
echo "addon binaries ready in $((SECONDS - start)) s"

step "images"
bash test/bed/images.sh

# The upgrade suite's target version (test/bed/setup-upgrade.sh). KUBECEPTION_BED_UPGRADE=0 skips it
# (the demo does: only the tests upgrade; .ci/run builds it beside `npm test`, which does not need it).
if [[ ${KUBECEPTION_BED_UPGRADE:-1} != 0 ]]; then
  bash test/bed/setup-upgrade.sh
fi

step "kubeception image"
bash test/bed/kubeception-image.sh >/dev/null
