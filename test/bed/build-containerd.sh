#!/usr/bin/env bash
# Build containerd 2 (with its CRI plugin), its runc shim and ctr from the Go module proxy into a cache
# keyed by version. runc stays Debian's (/usr/sbin/runc).
#
#   bash test/bed/build-containerd.sh     # builds what is missing, then exits; a no-op when all exist
#
# Env: KUBECEPTION_CACHE (default /var/cache/kubeception), CONTAINERD_VERSION (default below: the bed's
#      containerd, test/bed/runtime.ts), GO (default: go on PATH or /usr/local/go/bin/go).
# Output: $KUBECEPTION_CACHE/containerd/$CONTAINERD_VERSION/bin/{containerd,containerd-shim-runc-v2,ctr}.
# How: the module (github.com/containerd/containerd/v2, no replace lines) is downloaded, copied to a
# work dir and built as the main module, so its own go.mod/go.sum pin every dependency; the tags and
# version stamps of its Makefile's static build (`STATIC=1 make`). CGO is off: the only cgo code is the
# btrfs snapshotter (build-constrained to cgo; the bed uses overlayfs), and the shim is built CGO-off
# upstream too.
set -euo pipefail

CONTAINERD_VERSION="${CONTAINERD_VERSION:-v2.4.2}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"

OUT="$CACHE/containerd/$CONTAINERD_VERSION/bin"
SRC="$CACHE/containerd/$CONTAINERD_VERSION/src"
export GOCACHE="$CACHE/go/cache"
export GOMODCACHE="${GOMODCACHE:-$CACHE/go/mod}"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
BINARIES=(containerd containerd-shim-runc-v2 ctr)
PKG=github.com/containerd/containerd/v2

log() { printf '[build-containerd %s] %s\n' "$(date +%T)" "$*" >&2; }
all_built() { local b; for b in "${BINARIES[@]}"; do [[ -x "$OUT/$b" ]] || return 1; done; }

if all_built; then log "containerd $CONTAINERD_VERSION cached in $OUT"; exit 0; fi
mkdir -p "$OUT" "$GOCACHE" "$GOMODCACHE"
exec 9>"$CACHE/containerd/.lock" # one build at a time; a second caller waits, then finds the binaries
flock 9
all_built && exit 0

if [[ ! -s "$SRC/go.mod" ]]; then
  log "downloading $PKG@$CONTAINERD_VERSION"
  dir="$("$GO" mod download -json "$PKG@$CONTAINERD_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -d "$dir" ]] || { log "cannot download $PKG@$CONTAINERD_VERSION"; exit 1; }
  rm -rf "$SRC.tmp" && cp -r "$dir" "$SRC.tmp" && chmod -R u+w "$SRC.tmp" && mv "$SRC.tmp" "$SRC"
fi

cd "$SRC"
ldflags="-s -w -X $PKG/version.Version=$CONTAINERD_VERSION -X $PKG/version.Revision=kubeception-bed -X $PKG/version.Package=$PKG"
tags="urfave_cli_no_docs osusergo netgo static_build"
for b in "${BINARIES[@]}"; do
  [[ -x "$OUT/$b" ]] && continue
  t="$tags"; [[ $b == containerd-shim-runc-v2 ]] && t+=" no_grpc"
  start=$SECONDS
  log "building $b"
  "$GO" build -p 2 -trimpath -tags "$t" -ldflags "$ldflags" -o "$OUT/.$b.tmp" "./cmd/$b"
  mv "$OUT/.$b.tmp" "$OUT/$b"
  log "built $b in $((SECONDS - start)) s"
done
"$OUT/containerd" --version >&2
log "done: $OUT"
