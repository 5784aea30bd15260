#!/usr/bin/env bash
# Build the control-plane images from the cached static binaries (no registry involved), as docker-archive
# tarballs that `ctr -n k8s.io images import` names exactly as the kubelet will ask for them:
#   registry.k8s.io/{kube-apiserver,kube-controller-manager,kube-scheduler,kube-proxy}:$K8S_VERSION
#   registry.k8s.io/pause:<each of $PAUSE_VERSIONS> (kubeadm's PauseVersion of the table's minors: 3.10.1 up to
#   1.35, 3.10.2 from 1.36; the bed's containerd uses the newest as its sandbox image, tests may name either)
# Output: $KUBECEPTION_CACHE/images/$K8S_VERSION/<name>.tar and $KUBECEPTION_CACHE/images/pause-<version>.tar.
# Then, when test/bed/build-addons.sh has built their binaries, the addon images and a test image, in
# $KUBECEPTION_CACHE/images/addons/<name>-<version>.tar:
#   registry.k8s.io/coredns/coredns:$COREDNS_VERSION     /coredns, user 65532 (as the upstream image)
#   ghcr.io/flannel-io/flannel:$FLANNEL_VERSION         /opt/bin/flanneld, iptables/nft tools, cp (busybox)
#   localhost/flannel-cni-plugin:$CNI_PLUGINS_VERSION    /flannel and cp: the CNI plugin of containernetworking/plugins
#   localhost/bed-tools:busybox                         Debian's busybox-static: sh, nslookup, wget, httpd, nc, ping
# Skips archives that exist. Needs umoci, skopeo, busybox-static (and build-k8s.sh run first).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
PAUSE_VERSIONS="${PAUSE_VERSIONS:-3.10.1 3.10.2}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
BIN="$CACHE/k8s/$K8S_VERSION/bin"
OUT="$CACHE/images/$K8S_VERSION"
REPO=registry.k8s.io
COREDNS_VERSION="${COREDNS_VERSION:-v1.14.6}"
FLANNEL_VERSION="${FLANNEL_VERSION:-v0.28.4}"
CNI_PLUGINS_VERSION="${CNI_PLUGINS_VERSION:-v0.9.1}"
ADDON_BIN="$CACHE/addons"
ADDON_OUT="$CACHE/images/addons"
BUSYBOX=/bin/busybox

log() { printf '[images %s] %s\n' "$(date +%T)" "$*" >&2; }
# shellcheck source=test/bed/image-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/image-lib.sh" # base_files, copy_with_libs, build_image, iptables_tools, busybox_links
mkdir -p "$OUT"
exec 9>"$CACHE/images/.lock" # one build at a time (parallel test hosts may all ask for the images)
flock 9
tmp="$(mktemp -d /tmp/kubeception-images.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

fill_component() { base_files "$1"; cp "$BIN/$component" "$1/usr/local/bin/$component"; }

fill_proxy() {
  local root="$1"
  fill_component "$root"
  iptables_tools "$root"
  mkdir -p "$root/run" "$root/var/lib/kube-proxy"
}

fill_pause() { mkdir -p "$1"; cp "$CACHE/pause/bin/pause" "$1/pause"; }

for component in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  dest="$OUT/$component.tar"
  [[ -s "$dest" ]] && continue
  [[ -x "$BIN/$component" ]] || { log "missing $BIN/$component: run test/bed/build-k8s.sh first"; exit 1; }
  filler=fill_component; [[ $component == kube-proxy ]] && filler=fill_proxy
  build_image "$component" "$K8S_VERSION" "$dest" "$filler" "/usr/local/bin/$component"
done
for pause_version in $PAUSE_VERSIONS; do
  pause_tar="$CACHE/images/pause-$pause_version.tar"
  [[ -s "$pause_tar" ]] && continue
  [[ -x "$CACHE/pause/bin/pause" ]] || { log "missing $CACHE/pause/bin/pause: run test/bed/build-k8s.sh first"; exit 1; }
  build_image pause "$pause_version" "$pause_tar" fill_pause /pause
done
log "images in $OUT and $CACHE/images/pause-{${PAUSE_VERSIONS// /,}}.tar"

# --- addon and test images --------------------------------------------------------------------------------
fill_coredns() {
  base_files "$1"
  printf 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >>"$1/etc/passwd"
  printf 'nonroot:x:65532:\n' >>"$1/etc/group"
  cp "$ADDON_BIN/coredns/$COREDNS_VERSION/coredns" "$1/coredns"
}
fill_flannel() {
  base_files "$1"
  mkdir -p "$1/opt/bin" "$1/run/flannel"
  cp "$ADDON_BIN/flannel/$FLANNEL_VERSION/flanneld" "$1/opt/bin/flanneld"
  iptables_tools "$1"
  busybox_links "$1" cp sh
}
fill_cni_plugin() { base_files "$1"; cp "$ADDON_BIN/cni-plugins/$CNI_PLUGINS_VERSION/flannel" "$1/flannel"; busybox_links "$1" cp sh; }
fill_tools() {
  base_files "$1"
  busybox_links "$1"
  mkdir -p "$1/www" && echo ok >"$1/www/index.html"
}

if [[ -x "$ADDON_BIN/coredns/$COREDNS_VERSION/coredns" && -x "$ADDON_BIN/flannel/$FLANNEL_VERSION/flanneld" && -x "$ADDON_BIN/cni-plugins/$CNI_PLUGINS_VERSION/flannel" ]]; then
  [[ -x $BUSYBOX ]] || { log "missing $BUSYBOX: apt-get install busybox-static"; exit 1; }
  mkdir -p "$ADDON_OUT"
  addon() { # ARCHIVE-NAME REF USER FILLER ENTRYPOINT...
    local dest="$ADDON_OUT/$1.tar" ref="$2" user="$3" filler="$4"; shift 4
    [[ -s "$dest" ]] && return 0
    local name="${ref%:*}" tag="${ref##*:}"
    IMAGE_REF="$ref" IMAGE_USER="$user" build_image "${name##*/}" "$tag" "$dest" "$filler" "$@"
  }
  addon "coredns-$COREDNS_VERSION" "$REPO/coredns/coredns:$COREDNS_VERSION" 65532 fill_coredns /coredns
  addon "flannel-$FLANNEL_VERSION" "ghcr.io/flannel-io/flannel:$FLANNEL_VERSION" 0 fill_flannel /opt/bin/flanneld
  addon "flannel-cni-plugin-$CNI_PLUGINS_VERSION" "localhost/flannel-cni-plugin:$CNI_PLUGINS_VERSION" 0 fill_cni_plugin /bin/cp
  addon bed-tools-busybox localhost/bed-tools:busybox 0 fill_tools /bin/sh
  log "addon images in $ADDON_OUT"
else
  log "no addon binaries in $ADDON_BIN (run test/bed/build-addons.sh): addon images skipped"
fi
