#!/usr/bin/env bash
# Build etcd, etcdctl and etcdutl (static, CGO off) from the Go module proxy into a cache keyed by version.
#
#   bash test/bed/build-etcd.sh           # builds what is missing, then exits; a no-op when all exist
#
# Env: KUBECEPTION_CACHE (default /var/cache/kubeception), ETCD_VERSION (default below: the bed's etcd,
#      test/bed/etcd.ts), GO (default: go on PATH or /usr/local/go/bin/go).
# Output: $KUBECEPTION_CACHE/etcd/$ETCD_VERSION/bin/{etcd,etcdctl,etcdutl}.
# How: etcd's modules (go.etcd.io/etcd/server/v3, etcdctl/v3, etcdutl/v3) point at each other with
# `replace … => ../api` lines, which `go install module@version` refuses; a throw-away main module that
# requires all of them at the same version needs none (the published twins are what the replaces name).
# Each command is built from its module's package main, with etcd's own version stamp (GitSHA).
set -euo pipefail

ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"

OUT="$CACHE/etcd/$ETCD_VERSION/bin"
WORK="$CACHE/etcd/$ETCD_VERSION/build"
export GOCACHE="$CACHE/go/cache"
export GOMODCACHE="${GOMODCACHE:-$CACHE/go/mod}"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
BINARIES=(etcd etcdctl etcdutl)

log() { printf '[build-etcd %s] %s\n' "$(date +%T)" "$*" >&2; }
all_built() { local b; for b in "${BINARIES[@]}"; do [[ -x "$OUT/$b" ]] || return 1; done; }

if all_built; then log "etcd $ETCD_VERSION cached in $OUT"; exit 0; fi
mkdir -p "$OUT" "$WORK" "$GOCACHE" "$GOMODCACHE"
exec 9>"$CACHE/etcd/.lock" # one build at a time; a second caller waits, then finds the binaries
flock 9
all_built && exit 0

if [[ ! -s "$WORK/go.mod" ]] || ! grep -q "go.etcd.io/etcd/server/v3 $ETCD_VERSION" "$WORK/go.mod"; then
  log "resolving go.etcd.io/etcd/*@$ETCD_VERSION"
  gomod="$("$GO" mod download -json "go.etcd.io/etcd/server/v3@$ETCD_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -f "$gomod" ]] || { log "cannot find go.mod of go.etcd.io/etcd/server/v3@$ETCD_VERSION"; exit 1; }
  {
    echo "module kubeception.local/etcd-build"
    echo
    grep -m1 -E '^go [0-9]' "$gomod"
    echo
    echo "require ("
    for m in server etcdctl etcdutl api client/pkg client/v3 pkg; do
      m="${m%/v3}"; echo "	go.etcd.io/etcd/$m/v3 $ETCD_VERSION"
    done
    echo ")"
  } >"$WORK/go.mod"
  rm -f "$WORK/go.sum"
  log "module written to $WORK/go.mod"
fi

cd "$WORK"
ldflags="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=kubeception-bed"
for b in "${BINARIES[@]}"; do
  [[ -x "$OUT/$b" ]] && continue
  pkg="go.etcd.io/etcd/$b/v3"; [[ $b == etcd ]] && pkg=go.etcd.io/etcd/server/v3
  start=$SECONDS
  log "building $b ($pkg)"
  "$GO" build -p 2 -trimpath -ldflags "$ldflags" -o "$OUT/.$b.tmp" "$pkg"
  mv "$OUT/.$b.tmp" "$OUT/$b"
  log "built $b in $((SECONDS - start)) s"
done
"$OUT/etcd" --version >&2
log "done: $OUT"
