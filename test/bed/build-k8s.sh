#!/usr/bin/env bash
# Build real Kubernetes binaries (static, CGO off) from the Go module proxy into a cache keyed by version.
#
#   bash test/bed/build-k8s.sh            # builds what is missing, then exits; a no-op when all exist
#
# Env: KUBECEPTION_CACHE (default /var/cache/kubeception), K8S_VERSION (default v1.37.2, lib/constants.ts),
#      K8S_BINARIES (default: the list below), GO (default: go on PATH or /usr/local/go/bin/go).
# Output: $KUBECEPTION_CACHE/k8s/$K8S_VERSION/bin/<binary>, plus pause in $KUBECEPTION_CACHE/pause/bin/.
# How: a throw-away main module that requires k8s.io/kubernetes and replaces every staging module
# (k8s.io/api, k8s.io/client-go, ...) with its published v0.<minor>.<patch> twin, since kubernetes' own go.mod
# points them at ./staging, which a module download does not contain.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
BINARIES="${K8S_BINARIES:-kubelet kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubeadm}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"

OUT="$CACHE/k8s/$K8S_VERSION/bin"
WORK="$CACHE/k8s/$K8S_VERSION/build"
PAUSE_OUT="$CACHE/pause/bin"
export GOCACHE="$CACHE/go/cache"
export GOMODCACHE="${GOMODCACHE:-$CACHE/go/mod}"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"

log() { printf '[build-k8s %s] %s\n' "$(date +%T)" "$*" >&2; }

missing=()
for b in $BINARIES; do [[ -x "$OUT/$b" ]] || missing+=("$b"); done
need_pause=0; [[ -x "$PAUSE_OUT/pause" ]] || need_pause=1
if ((${#missing[@]} == 0 && need_pause == 0)); then
  log "all binaries cached in $OUT"
  exit 0
fi
mkdir -p "$OUT" "$WORK" "$PAUSE_OUT" "$GOCACHE" "$GOMODCACHE"
exec 9>"$CACHE/k8s/.lock" # one build at a time; a second caller waits, then finds the binaries
flock 9
missing=()
for b in $BINARIES; do [[ -x "$OUT/$b" ]] || missing+=("$b"); done
need_pause=0; [[ -x "$PAUSE_OUT/pause" ]] || need_pause=1

# --- pause: any static binary that sleeps until SIGTERM/SIGINT --------------------------------------
if ((need_pause)); then
  pdir="$CACHE/pause/src"; mkdir -p "$pdir"
  cat >"$pdir/go.mod" <<'EOF'
module kubeception.local/pause

go 1.22
EOF
  cat >"$pdir/main.go" <<'EOF'
// pause: the infra container of a pod. Sleeps until SIGINT or SIGTERM, reaps orphans.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s == syscall.SIGCHLD {
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
EOF
  (cd "$pdir" && "$GO" build -trimpath -ldflags '-s -w' -o "$PAUSE_OUT/pause.tmp" . && mv "$PAUSE_OUT/pause.tmp" "$PAUSE_OUT/pause")
  log "built pause"
fi
((${#missing[@]} == 0)) && exit 0

# --- the throw-away module (test/bed/k8s-module.sh, shared with build-conformance.sh) --------------------
# shellcheck source=test/bed/k8s-module.sh
source "$(dirname "${BASH_SOURCE[0]}")/k8s-module.sh"
write_k8s_module "$WORK" "$K8S_VERSION"

ldflags="$(k8s_ldflags "$K8S_VERSION")"

cd "$WORK"
for b in "${missing[@]}"; do
  start=$SECONDS
  log "building $b"
  "$GO" build -p 2 -trimpath -tags 'providerless,selinux,notest' -ldflags "$ldflags" \
    -o "$OUT/.$b.tmp" "k8s.io/kubernetes/cmd/$b"
  mv "$OUT/.$b.tmp" "$OUT/$b"
  log "built $b in $((SECONDS - start)) s"
done
"$OUT/kubelet" --version >&2 || true
log "done: $OUT"
