#!/usr/bin/env bash
# Build kwok (sigs.k8s.io/kwok: "Kubernetes WithOut Kubelet", keeps simulated Nodes Ready with heartbeats
# and Leases, static, CGO off) from the Go module proxy into a cache keyed by version. Used only by the
# scale bench (`npm run bench -- scale`, bench/scale.ts); test/bed/setup.sh does not build it (CI does not
# run the scale bench).
#
#   bash test/bed/build-kwok.sh     # builds what is missing, then exits; a no-op when the binary exists
#
# Env: KUBECEPTION_CACHE (default /var/cache/kubeception), KWOK_VERSION (default below; bench/scale.ts
#      names the same), GO (default: go on PATH or /usr/local/go/bin/go).
# Output: $KUBECEPTION_CACHE/kwok/$KWOK_VERSION/bin/kwok.
# Version: v0.8.0 (go 1.26.0 in its go.mod, client-go v0.36.1) resolves on the proxy (checked 2026-12-07
# with `go list -m sigs.k8s.io/kwok@v0.8.0`) and builds with the machine's go1.26.8.
# How: the module (no replace lines) is downloaded, copied to a work dir and built as the main module (as
# build-kube-bench.sh does), so its own go.mod/go.sum pin every dependency; stamped as hack/releases.sh
# stamps it (pkg/consts.Version); GOCACHE and GOMODCACHE are the bed's (build-k8s.sh).
set -euo pipefail

KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"

DIR="$CACHE/kwok/$KWOK_VERSION"
OUT="$DIR/bin"
SRC="$DIR/src"
PKG=sigs.k8s.io/kwok
export GOCACHE="$CACHE/go/cache"
export GOMODCACHE="${GOMODCACHE:-$CACHE/go/mod}"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"

log() { printf '[build-kwok %s] %s\n' "$(date +%T)" "$*" >&2; }
built() { [[ -x "$OUT/kwok" ]]; }

if built; then log "kwok $KWOK_VERSION cached in $OUT"; exit 0; fi
mkdir -p "$OUT" "$GOCACHE" "$GOMODCACHE"
exec 9>"$CACHE/kwok/.lock" # one build at a time; a second caller waits, then finds the binary
flock 9
built && exit 0

if [[ ! -s "$SRC/go.mod" ]]; then
  log "downloading $PKG@$KWOK_VERSION"
  dir="$(cd /tmp && "$GO" mod download -json "$PKG@$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -s "$dir/go.mod" && -d "$dir/cmd/kwok" ]] || { log "cannot download $PKG@$KWOK_VERSION (or it has no cmd/kwok)"; exit 1; }
  rm -rf "$SRC.tmp" && cp -r "$dir" "$SRC.tmp" && chmod -R u+w "$SRC.tmp" && mv "$SRC.tmp" "$SRC"
fi

start=$SECONDS
log "building kwok"
(cd "$SRC" && "$GO" build -p 2 -trimpath -ldflags "-s -w -X $PKG/pkg/consts.Version=$KWOK_VERSION" -o "$OUT/.kwok.tmp" ./cmd/kwok)
mv "$OUT/.kwok.tmp" "$OUT/kwok"
log "built kwok in $((SECONDS - start)) s"
log "$("$OUT/kwok" --version 2>/dev/null | head -1): $OUT/kwok"
