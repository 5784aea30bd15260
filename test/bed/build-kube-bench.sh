#!/usr/bin/env bash
# Build kube-bench (the CIS Kubernetes Benchmark runner, static, CGO off) from the Go module proxy into a
# cache keyed by version, with the benchmark definitions (cfg/) of the same module beside it.
#
#   bash test/bed/build-kube-bench.sh     # builds what is missing, then exits; a no-op when both exist
#
# Env: KUBECEPTION_CACHE (default /var/cache/kubeception), KUBE_BENCH_VERSION (default below),
#      GO (default: go on PATH or /usr/local/go/bin/go).
# Output: $KUBECEPTION_CACHE/kube-bench/$KUBE_BENCH_VERSION/bin/kube-bench and .../cfg/ (the module's cfg/,
#         read at run time with --config-dir; `npm run cis` lays kubeception's overrides over a copy of it,
#         test/cis/benchmark.ts).
# How: the module (github.com/aquasecurity/kube-bench, no replace lines) is downloaded, copied to a work dir
# and built as the main module (as build-containerd.sh does), so its own go.mod/go.sum pin every dependency
# (`go install …@version` would also ask the proxy for the module's version list, which it refuses here);
# stamped as its makefile stamps it (cmd.KubeBenchVersion); GOCACHE and GOMODCACHE are the bed's
# (build-k8s.sh).
set -euo pipefail

KUBE_BENCH_VERSION="${KUBE_BENCH_VERSION:-v0.15.6}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"

DIR="$CACHE/kube-bench/$KUBE_BENCH_VERSION"
OUT="$DIR/bin"
SRC="$DIR/src"
PKG=github.com/aquasecurity/kube-bench
export GOCACHE="$CACHE/go/cache"
export GOMODCACHE="${GOMODCACHE:-$CACHE/go/mod}"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"

log() { printf '[build-kube-bench %s] %s\n' "$(date +%T)" "$*" >&2; }
built() { [[ -x "$OUT/kube-bench" && -s "$DIR/cfg/config.yaml" ]]; }

if built; then log "kube-bench $KUBE_BENCH_VERSION cached in $DIR"; exit 0; fi
mkdir -p "$OUT" "$GOCACHE" "$GOMODCACHE"
exec 9>"$CACHE/kube-bench/.lock" # one build at a time; a second caller waits, then finds the binary
flock 9
built && exit 0

if [[ ! -s "$SRC/go.mod" ]]; then
  log "downloading $PKG@$KUBE_BENCH_VERSION"
  dir="$("$GO" mod download -json "$PKG@$KUBE_BENCH_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -s "$dir/go.mod" && -s "$dir/cfg/config.yaml" ]] || { log "cannot download $PKG@$KUBE_BENCH_VERSION (or it has no cfg/config.yaml)"; exit 1; }
  rm -rf "$SRC.tmp" && cp -r "$dir" "$SRC.tmp" && chmod -R u+w "$SRC.tmp" && mv "$SRC.tmp" "$SRC"
fi

if [[ ! -x "$OUT/kube-bench" ]]; then
  start=$SECONDS
  log "building kube-bench"
  (cd "$SRC" && "$GO" build -p 2 -trimpath -ldflags "-s -w -X $PKG/cmd.KubeBenchVersion=$KUBE_BENCH_VERSION" -o "$OUT/.kube-bench.tmp" .)
  mv "$OUT/.kube-bench.tmp" "$OUT/kube-bench"
  log "built kube-bench in $((SECONDS - start)) s"
fi

if [[ ! -s "$DIR/cfg/config.yaml" ]]; then
  rm -rf "$DIR/cfg.tmp" && cp -r "$SRC/cfg" "$DIR/cfg.tmp" && chmod -R go+rX "$DIR/cfg.tmp" && mv "$DIR/cfg.tmp" "$DIR/cfg"
  log "cfg/ copied to $DIR/cfg"
fi
log "kube-bench $("$OUT/kube-bench" version 2>/dev/null): $DIR"
