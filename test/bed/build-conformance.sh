#!/usr/bin/env bash
# Build the upstream conformance suite of one Kubernetes release from the Go module proxy, cached by
# version like the bed's binaries, and the images its [Conformance] specs use (conformance-images.sh).
#
#   bash test/bed/build-conformance.sh    # builds what is missing; a no-op when all exist
#
# Env: KUBECEPTION_CACHE (default /var/cache/kubeception), K8S_VERSION (default v1.37.2), GO,
#      CRANE_VERSION (default v0.22.1: the local registry of the PullAlways specs).
# Output: $KUBECEPTION_CACHE/conformance/$K8S_VERSION/bin/{e2e.test,ginkgo,kubectl,agnhost,nnp,sample-apiserver},
#         $KUBECEPTION_CACHE/crane/$CRANE_VERSION/bin/crane, and the images (see conformance-images.sh).
# How: in the same throw-away module as build-k8s.sh (test/bed/k8s-module.sh: k8s.io/kubernetes with its
# staging modules replaced by their published twins), with the same tags and version stamps, so the
# packages the components share come from GOCACHE: `go test -c` of k8s.io/kubernetes/test/e2e, ginkgo at
# the version that module graph pins (the CLI must match the library), kubectl, agnhost, nonewprivs' nnp
# and k8s.io/sample-apiserver. crane is go-containerregistry's own module (`go install …@version`).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
CRANE_VERSION="${CRANE_VERSION:-v0.22.1}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

OUT="$CACHE/conformance/$K8S_VERSION/bin"
WORK="$CACHE/k8s/$K8S_VERSION/build"
CRANE_OUT="$CACHE/crane/$CRANE_VERSION/bin"
export GOCACHE="$CACHE/go/cache"
export GOMODCACHE="${GOMODCACHE:-$CACHE/go/mod}"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
TAGS='providerless,selinux,notest'
BINARIES=(e2e.test ginkgo kubectl agnhost nnp sample-apiserver)

log() { printf '[build-conformance %s] %s\n' "$(date +%T)" "$*" >&2; }
# shellcheck source=test/bed/k8s-module.sh
source "$HERE/k8s-module.sh"

missing=()
for b in "${BINARIES[@]}"; do [[ -x "$OUT/$b" ]] || missing+=("$b"); done
mkdir -p "$OUT" "$CRANE_OUT" "$GOCACHE" "$GOMODCACHE"
if ((${#missing[@]})) || [[ ! -x "$CRANE_OUT/crane" ]]; then
  exec 9>"$CACHE/k8s/.lock" # the same lock as build-k8s.sh: one Kubernetes build at a time on 2 cores
  flock 9
  missing=()
  for b in "${BINARIES[@]}"; do [[ -x "$OUT/$b" ]] || missing+=("$b"); done
fi

if ((${#missing[@]})); then
  write_k8s_module "$WORK" "$K8S_VERSION"
  ldflags="$(k8s_ldflags "$K8S_VERSION")"
  cd "$WORK"
  for b in "${missing[@]}"; do
    start=$SECONDS
    log "building $b"
    case $b in
      e2e.test) "$GO" test -c -vet=off -p 2 -trimpath -tags "$TAGS" -ldflags "$ldflags" -o "$OUT/.$b.tmp" k8s.io/kubernetes/test/e2e ;;
      ginkgo) "$GO" build -p 2 -trimpath -ldflags '-s -w' -o "$OUT/.$b.tmp" github.com/onsi/ginkgo/v2/ginkgo ;;
      kubectl) "$GO" build -p 2 -trimpath -tags "$TAGS" -ldflags "$ldflags" -o "$OUT/.$b.tmp" k8s.io/kubernetes/cmd/kubectl ;;
      agnhost) "$GO" build -p 2 -trimpath -tags "$TAGS" -ldflags '-s -w' -o "$OUT/.$b.tmp" k8s.io/kubernetes/test/images/agnhost ;;
      nnp) "$GO" build -p 2 -trimpath -ldflags '-s -w' -o "$OUT/.$b.tmp" k8s.io/kubernetes/test/images/nonewprivs ;;
      sample-apiserver) "$GO" build -p 2 -trimpath -tags "$TAGS" -ldflags "$ldflags" -o "$OUT/.$b.tmp" k8s.io/sample-apiserver ;;
    esac
    mv "$OUT/.$b.tmp" "$OUT/$b"
    log "built $b in $((SECONDS - start)) s"
  done
  log "ginkgo $("$OUT/ginkgo" version | awk '{print $NF}'), e2e.test of $K8S_VERSION: $OUT"
fi

if [[ ! -x "$CRANE_OUT/crane" ]]; then
  start=$SECONDS
  log "building crane $CRANE_VERSION"
  (cd "$CACHE/crane" && GOFLAGS=-buildvcs=false GOBIN="$CRANE_OUT" "$GO" install -trimpath -ldflags '-s -w' "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION")
  log "built crane in $((SECONDS - start)) s"
fi

bash "$HERE/build-busybox.sh"
K8S_VERSION="$K8S_VERSION" bash "$HERE/conformance-images.sh"
