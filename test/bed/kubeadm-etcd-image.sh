#!/usr/bin/env bash
# The etcd image kubeadm's stacked etcd (its default: a local etcd static pod) asks for, built from the bed's
# static etcd (build-etcd.sh) and named exactly as `kubeadm config images list` of $K8S_VERSION names it, so
# the kubelet finds it in containerd and pulls nothing. Used by the CIS peer (test/cis/run.ts): kubeadm's
# own etcd, with its TLS flags and data dir, is what the benchmark's etcd checks should see.
#
# Output: $KUBECEPTION_CACHE/images/$K8S_VERSION/kubeadm-etcd.tar (docker-archive; kept when it exists).
# Needs build-k8s.sh (kubeadm) and build-etcd.sh run first, umoci and skopeo.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
ETCD_BIN="$CACHE/etcd/${ETCD_VERSION:-v3.6.16}/bin/etcd"
KUBEADM="$CACHE/k8s/$K8S_VERSION/bin/kubeadm"
OUT="$CACHE/images/$K8S_VERSION"
DEST="$OUT/kubeadm-etcd.tar"

log() { printf '[kubeadm-etcd-image %s] %s\n' "$(date +%T)" "$*" >&2; }
# shellcheck source=test/bed/image-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/image-lib.sh" # base_files, build_image
[[ -s $DEST ]] && { log "cached: $DEST"; exit 0; }
for f in "$ETCD_BIN" "$KUBEADM"; do [[ -x $f ]] || { log "missing $f: run build-etcd.sh and build-k8s.sh first"; exit 1; }; done
ref="$("$KUBEADM" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null | grep -m1 '/etcd:')" || { log "kubeadm $K8S_VERSION lists no etcd image"; exit 1; }
mkdir -p "$OUT"
exec 9>"$CACHE/images/.lock" # images.sh's lock
flock 9
tmp="$(mktemp -d /tmp/kubeception-etcd-image.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
fill_etcd() { base_files "$1"; cp "$ETCD_BIN" "$1/usr/local/bin/etcd"; mkdir -p "$1/var/lib/etcd"; }
IMAGE_REF="$ref" build_image etcd "${ref##*:}" "$DEST" fill_etcd /usr/local/bin/etcd
