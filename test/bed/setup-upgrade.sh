#!/usr/bin/env bash
# The upgrade suite's versions other than the bed's default (test/bed/upgrade.ts): for each version of
# the chain, its binaries (the first one's kubeadm too, for the benchmark's kubeadm peer), CoreDNS from
# kubeadm's pairing (manifests/addons/versions.ts) and the images, cached by version like the rest of
# the bed. Called by setup.sh, and by .ci/run in the background while `npm test` runs (nothing in
# `npm test` upgrades). Idempotent; warm: seconds.
#
# Env: K8S_UPGRADE_CHAIN (default "v1.34.4 v1.35.4 v1.36.3": v1.34.4 is the "existing clusters" source,
# the default v1.37.2 is built by setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
K8S_UPGRADE_CHAIN="${K8S_UPGRADE_CHAIN:-v1.34.4 v1.35.4 v1.36.3}"
coredns_of() { node --import tsx -e 'import("./manifests/addons/versions.ts").then((m) => console.log(m.coreDNSVersion(process.argv[1]) ?? ""))' "$1"; }
start=$SECONDS
first=1
for v in $K8S_UPGRADE_CHAIN; do
  coredns="$(coredns_of "$v")"
  [[ -n $coredns ]] || { echo "no CoreDNS pinned for $v in manifests/addons/versions.ts" >&2; exit 1; }
  printf '\n=== %s (%s)\n' "upgrade chain $v: binaries, CoreDNS $coredns, images (cached)" "$(date +%T)"
  bins="kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy"
  ((first)) && bins+=" kubeadm"
  first=0
  K8S_VERSION="$v" K8S_BINARIES="$bins" bash test/bed/build-k8s.sh
  COREDNS_VERSION="$coredns" bash test/bed/build-addons.sh
  K8S_VERSION="$v" COREDNS_VERSION="$coredns" bash test/bed/images.sh
done
echo "upgrade chain ready in $((SECONDS - start)) s"
