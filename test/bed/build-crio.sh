#!/usr/bin/env bash
# Build CRI-O (crio, pinns) and crictl from the Go module proxy into a cache keyed by version: the
# container runtime of the bed's "kubic" hosts (test/bed/kubic.ts). conmon and runc stay Debian's
# (/usr/bin/conmon 2.1.6, /usr/sbin/runc 1.1.5), the CNI plugins are the bed's (/usr/lib/cni).
#
#   bash test/bed/build-crio.sh     # builds what is missing, then exits; a no-op when all exist
#
# Env: KUBECEPTION_CACHE (default /var/cache/kubeception), CRIO_VERSION, CRICTL_VERSION (defaults
#      below: test/bed/crio.ts names the same), GO (default: go on PATH or /usr/local/go/bin/go).
# Output: $KUBECEPTION_CACHE/crio/$CRIO_VERSION/bin/{crio,pinns,crictl}.
# Needs: gcc, libc6-dev (pinns is a static C program), pkg-config and libseccomp-dev (crio's seccomp
#        support is cgo against libseccomp) — test/bed/setup.sh installs them.
#
# Versions: the Go module proxy serves github.com/cri-o/cri-o v1.34.0, v1.35.2, v1.36.1–v1.36.3 and no
# v1.37.x (tried 2026-12-05: v1.37.0–v1.37.3 answer 403 "not available", so do v1.35.0, v1.35.1,
# v1.35.3, v1.36.0, v1.36.4–v1.36.6). v1.36.3 (go 1.26.3 in its go.mod) builds with the machine's
# go1.26.8; it talks CRI v1, which the kubelets 1.35–1.37 use. crictl: sigs.k8s.io/cri-tools v1.37.0.
#
# How: each module is downloaded, copied to a work dir and built as the main module, so its own
# go.mod/go.sum pin every dependency. Build tags are those CRI-O's Makefile picks on a host without
# the optional libraries Debian lacks or the bed does not use: containers_image_openpgp (signature
# checks in Go, no gpgme), containers_image_ostree_stub, exclude_graphdriver_btrfs (no btrfs headers;
# the bed's storage is overlay on a tmpfs) and exclude_graphdriver_zfs, seccomp (cgo, libseccomp);
# no apparmor, selinux or libsubid tags. go.podman.io/storage v1.61 (CRI-O 1.36's) has no
# devicemapper driver any more, so there is no devicemapper tag to set. pinns: `cc -static` of
# pinns/src, as pinns/Makefile does.
set -euo pipefail

CRIO_VERSION="${CRIO_VERSION:-v1.36.3}"
CRICTL_VERSION="${CRICTL_VERSION:-v1.37.0}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"

OUT="$CACHE/crio/$CRIO_VERSION/bin"
SRC="$CACHE/crio/$CRIO_VERSION/src"
CRICTL_SRC="$CACHE/crio/$CRIO_VERSION/crictl-src"
export GOCACHE="$CACHE/go/cache"
export GOMODCACHE="${GOMODCACHE:-$CACHE/go/mod}"
export GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false"
BINARIES=(crio pinns crictl)
PKG=github.com/cri-o/cri-o
CRICTL_PKG=sigs.k8s.io/cri-tools

log() { printf '[build-crio %s] %s\n' "$(date +%T)" "$*" >&2; }
all_built() { local b; for b in "${BINARIES[@]}"; do [[ -x "$OUT/$b" ]] || return 1; done; }

if all_built; then log "CRI-O $CRIO_VERSION cached in $OUT"; exit 0; fi
mkdir -p "$OUT" "$GOCACHE" "$GOMODCACHE"
exec 9>"$CACHE/crio/.lock" # one build at a time; a second caller waits, then finds the binaries
flock 9
all_built && exit 0

fetch() { # fetch <module> <version> <dir>: the module's files, writable, at <dir>
  [[ -s "$3/go.mod" ]] && return 0
  log "downloading $1@$2"
  local dir
  dir="$(cd /tmp && "$GO" mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -d "$dir" ]] || { log "cannot download $1@$2"; exit 1; }
  rm -rf "$3.tmp" && cp -r "$dir" "$3.tmp" && chmod -R u+w "$3.tmp" && mv "$3.tmp" "$3"
}

build() { # build <binary> <command...>: runs the command (which writes $OUT/.<binary>.tmp), then moves it in
  local b=$1 start=$SECONDS; shift
  [[ -x "$OUT/$b" ]] && return 0
  log "building $b"
  "$@"
  mv "$OUT/.$b.tmp" "$OUT/$b"
  log "built $b in $((SECONDS - start)) s"
}

fetch "$PKG" "$CRIO_VERSION" "$SRC"
cd "$SRC"
tags="containers_image_openpgp containers_image_ostree_stub exclude_graphdriver_btrfs exclude_graphdriver_zfs seccomp"
crio_ldflags="-s -w -X $PKG/internal/version.buildCommit=kubeception-bed"
build crio env CGO_ENABLED=1 "$GO" build -p 2 -trimpath -tags "$tags" -ldflags "$crio_ldflags" -o "$OUT/.crio.tmp" ./cmd/crio
build pinns cc -std=c99 -Os -Wall -Wextra -static -o "$OUT/.pinns.tmp" pinns/src/*.c

fetch "$CRICTL_PKG" "$CRICTL_VERSION" "$CRICTL_SRC"
cd "$CRICTL_SRC"
crictl_ldflags="-s -w -X $CRICTL_PKG/pkg/version.Version=$CRICTL_VERSION"
build crictl env CGO_ENABLED=0 "$GO" build -p 2 -trimpath -ldflags "$crictl_ldflags" -o "$OUT/.crictl.tmp" ./cmd/crictl

"$OUT/crio" --version >&2
"$OUT/crictl" --version >&2
log "done: $OUT"
