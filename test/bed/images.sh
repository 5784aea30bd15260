#!/usr/bin/env bash
# Build the control-plane images from the cached static binaries (no registry involved), as docker-archive
# tarballs that `ctr -n k8s.io images import` names exactly as the kubelet will ask for them:
#   registry.k8s.io/{kube-apiserver,kube-controller-manager,kube-scheduler,kube-proxy}:$K8S_VERSION
#   registry.k8s.io/pause:3.10.1
# Output: $KUBECEPTION_CACHE/images/$K8S_VERSION/<name>.tar and $KUBECEPTION_CACHE/images/pause-3.10.1.tar.
# Skips archives that exist. Needs umoci, skopeo (and build-k8s.sh run first).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
PAUSE_VERSION="${PAUSE_VERSION:-3.10.1}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
BIN="$CACHE/k8s/$K8S_VERSION/bin"
OUT="$CACHE/images/$K8S_VERSION"
PAUSE_TAR="$CACHE/images/pause-$PAUSE_VERSION.tar"
REPO=registry.k8s.io

log() { printf '[images %s] %s\n' "$(date +%T)" "$*" >&2; }
mkdir -p "$OUT"
exec 9>"$CACHE/images/.lock" # one build at a time (parallel test hosts may all ask for the images)
flock 9
tmp="$(mktemp -d /tmp/kubeception-images.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

# Minimal files a distroless-like image has.
base_files() {
  local root="$1"
  mkdir -p "$root/etc" "$root/tmp" "$root/var/run" "$root/usr/local/bin"
  chmod 1777 "$root/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  if [[ -d /etc/ssl/certs ]]; then mkdir -p "$root/etc/ssl/certs" && cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" 2>/dev/null || true; fi
}

# Copies a dynamically linked file and every library it needs (ldd), keeping paths.
copy_with_libs() {
  local root="$1"; shift
  local f lib
  for f in "$@"; do
    mkdir -p "$root$(dirname "$f")"
    cp -a "$f" "$root$f"
    [[ -L "$f" ]] && { local t; t="$(readlink -f "$f")"; mkdir -p "$root$(dirname "$t")"; cp -a "$t" "$root$t"; f="$t"; }
    while read -r lib; do
      [[ -e "$root$lib" ]] && continue
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done < <(ldd "$f" 2>/dev/null | grep -oE '/[^ ]+' | sort -u)
  done
}

# build NAME TAG ROOTFS-FILLER ENTRYPOINT... → docker-archive at $dest
build_image() {
  local name="$1" tag="$2" dest="$3" filler="$4"; shift 4
  local layout="$tmp/$name-oci" bundle="$tmp/$name-bundle"
  rm -rf "$layout" "$bundle"
  umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  umoci unpack --image "$layout:$tag" "$bundle" >/dev/null
  "$filler" "$bundle/rootfs"
  umoci repack --image "$layout:$tag" "$bundle"
  local cfg=(--image "$layout:$tag" --config.user 0 --config.workingdir /
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    --os linux --architecture amd64)
  local e; for e in "$@"; do cfg+=(--config.entrypoint "$e"); done
  umoci config "${cfg[@]}"
  rm -f "$dest.tmp"
  skopeo copy --quiet "oci:$layout:$tag" "docker-archive:$dest.tmp:$REPO/$name:$tag"
  mv "$dest.tmp" "$dest"
  rm -rf "$layout" "$bundle"
  log "built $REPO/$name:$tag ($(du -h "$dest" | cut -f1))"
}

fill_component() { base_files "$1"; cp "$BIN/$component" "$1/usr/local/bin/$component"; }

fill_proxy() {
  local root="$1"
  fill_component "$root"
  # kube-proxy runs iptables(-save,-restore), ip6tables… and, in nftables mode, nft: take the machine's.
  local tools=() t
  for t in /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/nft /usr/sbin/ip /usr/sbin/conntrack; do
    [[ -e "$t" ]] && tools+=("$t")
  done
  copy_with_libs "$root" "${tools[@]}"
  local x
  for x in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sf xtables-nft-multi "$root/usr/sbin/$x"
    ln -sf xtables-nft-multi "$root/usr/sbin/$x-nft"
    ln -sf xtables-legacy-multi "$root/usr/sbin/$x-legacy"
  done
  # iptables loads its match/target extensions with dlopen: ldd does not see them.
  local xdir
  for xdir in /usr/lib/x86_64-linux-gnu/xtables /usr/lib/xtables; do
    if [[ -d "$xdir" ]]; then
      mkdir -p "$root$xdir"
      cp -a "$xdir/." "$root$xdir/"
      copy_with_libs "$root" "$xdir"/*.so
    fi
  done
  mkdir -p "$root/run" "$root/var/lib/kube-proxy"
  # etc/ethertypes etc. as iptables expects
  [[ -f /etc/ethertypes ]] && cp /etc/ethertypes "$root/etc/"
  [[ -f /etc/protocols ]] && cp /etc/protocols "$root/etc/"
  return 0
}

fill_pause() { mkdir -p "$1"; cp "$CACHE/pause/bin/pause" "$1/pause"; }

for component in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  dest="$OUT/$component.tar"
  [[ -s "$dest" ]] && continue
  [[ -x "$BIN/$component" ]] || { log "missing $BIN/$component: run test/bed/build-k8s.sh first"; exit 1; }
  filler=fill_component; [[ $component == kube-proxy ]] && filler=fill_proxy
  build_image "$component" "$K8S_VERSION" "$dest" "$filler" "/usr/local/bin/$component"
done
if [[ ! -s "$PAUSE_TAR" ]]; then
  [[ -x "$CACHE/pause/bin/pause" ]] || { log "missing $CACHE/pause/bin/pause: run test/bed/build-k8s.sh first"; exit 1; }
  build_image pause "$PAUSE_VERSION" "$PAUSE_TAR" fill_pause /pause
fi
log "images in $OUT and $PAUSE_TAR"
