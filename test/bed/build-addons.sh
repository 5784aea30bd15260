#!/usr/bin/env bash
# Build the addon binaries the bed's images need, from the Go module proxy, into a cache keyed by version:
#   coredns  (github.com/coredns/coredns at kubeadm's pairing for the bed's Kubernetes minor)
#   flanneld (github.com/flannel-io/flannel)
#   flannel  (the flannel CNI plugin: plugins/meta/flannel of github.com/containernetworking/plugins v0.9.1,
#             the code flannel-io/cni-plugin was forked from; that module is not served by the proxy)
#
#   bash test/bed/build-addons.sh         # builds what is missing; a no-op when all exist
#
# Env: KUBECEPTION_CACHE (default /var/cache/kubeception), COREDNS_VERSION, FLANNEL_VERSION,
#      CNI_PLUGINS_VERSION (defaults below; keep them equal to manifests/addons/versions.ts), GO.
# Output: $KUBECEPTION_CACHE/addons/{coredns/$COREDNS_VERSION/coredns, flannel/$FLANNEL_VERSION/flanneld,
#         cni-plugins/$CNI_PLUGINS_VERSION/flannel}.
# How: each module is downloaded (go mod download), copied to a work dir and built as the main module, so
# its own go.mod and go.sum decide every dependency. To keep the cold build small, only what the bed runs is
# compiled: CoreDNS with the plugins of kubeadm's Corefile and a few small common ones (no cloud backends),
# flanneld with its vxlan, host-gw and ipip backends (no ipsec, wireguard, udp, extension, tencentvpc).
set -euo pipefail

COREDNS_VERSION="${COREDNS_VERSION:-v1.14.6}"
FLANNEL_VERSION="${FLANNEL_VERSION:-v0.28.4}"
CNI_PLUGINS_VERSION="${CNI_PLUGINS_VERSION:-v0.9.1}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
OUT="$CACHE/addons"
export GOCACHE="$CACHE/go/cache"
export GOMODCACHE="${GOMODCACHE:-$CACHE/go/mod}"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"

# CoreDNS plugins compiled in (directive order comes from CoreDNS's own zdirectives.go).
# (The `prometheus` directive lives in plugin/metrics.)
COREDNS_PLUGINS="errors health ready kubernetes metrics forward cache loop reload loadbalance log hosts rewrite
  template whoami debug any bind bufsize chaos metadata cancel autopath k8s_external minimal root nsid local
  header timeouts acl view file transfer"
FLANNEL_DROP="extension ipsec tencentvpc udp wireguard"

COREDNS_BIN="$OUT/coredns/$COREDNS_VERSION/coredns"
FLANNELD_BIN="$OUT/flannel/$FLANNEL_VERSION/flanneld"
CNI_FLANNEL_BIN="$OUT/cni-plugins/$CNI_PLUGINS_VERSION/flannel"

log() { printf '[build-addons %s] %s\n' "$(date +%T)" "$*" >&2; }
all_built() { [[ -x "$COREDNS_BIN" && -x "$FLANNELD_BIN" && -x "$CNI_FLANNEL_BIN" ]]; }

if all_built; then log "all addon binaries cached in $OUT"; exit 0; fi
mkdir -p "$OUT" "$GOCACHE" "$GOMODCACHE"
exec 9>"$OUT/.lock" # one build at a time; a second caller waits, then finds the binaries
flock 9
all_built && exit 0

# src MODULE VERSION → a writable copy of the module's source in $OUT/src/<name>-<version> (printed).
src() {
  local dir work
  dir="$("$GO" mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -d "$dir" ]] || { log "cannot download $1@$2"; exit 1; }
  work="$OUT/src/$(basename "$1")-$2"
  rm -rf "$work" && mkdir -p "$work" && cp -r "$dir/." "$work/" && chmod -R u+w "$work"
  printf '%s\n' "$work"
}

# build DIR PACKAGE OUTPUT LDFLAGS
build() {
  local start=$SECONDS
  mkdir -p "$(dirname "$3")"
  (cd "$1" && "$GO" build -p 2 -trimpath -ldflags "-s -w $4" -o "$3.tmp" "$2")
  mv "$3.tmp" "$3"
  log "built $3 in $((SECONDS - start)) s"
}

if [[ ! -x "$COREDNS_BIN" ]]; then
  log "coredns $COREDNS_VERSION"
  work="$(src github.com/coredns/coredns "$COREDNS_VERSION")"
  keep="$(printf '%s\n' $COREDNS_PLUGINS | sed 's#.*#"github.com/coredns/coredns/plugin/&"#' | paste -sd'|')"
  # zplugin.go is the generated list of plugin imports: keep only the chosen ones.
  awk -v keep="$keep" 'BEGIN{n=split(keep,k,"|"); for(i=1;i<=n;i++) want[k[i]]=1}
    /^\t_ "/ { if (!($2 in want)) next } { print }' "$work/core/plugin/zplugin.go" >"$work/core/plugin/zplugin.go.new"
  mv "$work/core/plugin/zplugin.go.new" "$work/core/plugin/zplugin.go"
  n="$(grep -c '^	_ "' "$work/core/plugin/zplugin.go")"
  [[ "$n" -ge 20 ]] || { log "only $n CoreDNS plugins kept; zplugin.go changed shape?"; exit 1; }
  build "$work" . "$COREDNS_BIN" "-X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION"
fi

if [[ ! -x "$FLANNELD_BIN" ]]; then
  log "flanneld $FLANNEL_VERSION"
  work="$(src github.com/flannel-io/flannel "$FLANNEL_VERSION")"
  for b in $FLANNEL_DROP; do sed -i "\#^[[:space:]]*_ \"github.com/flannel-io/flannel/pkg/backend/$b\"#d" "$work/main.go"; done
  grep -q 'pkg/backend/vxlan"' "$work/main.go" && grep -q 'pkg/backend/hostgw"' "$work/main.go" || { log "main.go lost vxlan/hostgw"; exit 1; }
  build "$work" . "$FLANNELD_BIN" "-X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION"
fi

if [[ ! -x "$CNI_FLANNEL_BIN" ]]; then
  log "flannel CNI plugin from containernetworking/plugins $CNI_PLUGINS_VERSION"
  work="$(src github.com/containernetworking/plugins "$CNI_PLUGINS_VERSION")"
  build "$work" ./plugins/meta/flannel "$CNI_FLANNEL_BIN" "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_PLUGINS_VERSION"
fi
rm -rf "$OUT/src"
log "done: $OUT"
