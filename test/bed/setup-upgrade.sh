#!/usr/bin/env bash
# The upgrade suite's target version (test/bed/upgrade.ts): its binaries (kubeadm only when a bench
# needs it: bench/upgrade.ts builds it), CoreDNS from kubeadm's pairing and the images, cached by
# version like the rest of the bed. Called by setup.sh, and by .ci/run in the background while
# `npm test` runs (nothing in `npm test` upgrades). Idempotent; warm: seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
UPGRADE_VERSION="${K8S_UPGRADE_VERSION:-v1.35.4}" UPGRADE_COREDNS="${UPGRADE_COREDNS:-v1.13.1}"
printf '\n=== %s (%s)\n' "upgrade version $UPGRADE_VERSION: binaries, CoreDNS $UPGRADE_COREDNS, images (cached)" "$(date +%T)"
start=$SECONDS
K8S_VERSION="$UPGRADE_VERSION" K8S_BINARIES="kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy" bash test/bed/build-k8s.sh
COREDNS_VERSION="$UPGRADE_COREDNS" bash test/bed/build-addons.sh
K8S_VERSION="$UPGRADE_VERSION" COREDNS_VERSION="$UPGRADE_COREDNS" bash test/bed/images.sh
echo "upgrade version ready in $((SECONDS - start)) s"
