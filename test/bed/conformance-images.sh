#!/usr/bin/env bash
# The images the [Conformance] e2e specs of $K8S_VERSION run, built from this machine's files and the
# binaries of build-conformance.sh, named exactly as test/utils/image/manifest.go of that release names
# them (registry.k8s.io/e2e-test-images/agnhost:2.66.1, …), so an image already in containerd is used
# and nothing is pulled. Called by build-conformance.sh; cached (skips archives that exist).
#
# Output: $KUBECEPTION_CACHE/conformance/$K8S_VERSION/images/<name>-<tag>.tar (docker-archive) and
#         images.txt there: one line per archive, "<archive> <ref> [<ref>…]".
#
# What each image holds (the upstream Dockerfiles in test/images/ are the model; alpine or Debian
# packages come from this machine instead):
#   agnhost (and the older tag AgnhostPrev)  /agnhost (agnhost-2 link), /coredns (the bed's CoreDNS), the
#       porter certs, /uploads, user 1000 / group 50000 "…-defined-in-image"; busybox applets, and glibc
#       dig, getent, curl, nc (OpenBSD), bash, dash as /bin/sh, with their libraries. ENTRYPOINT /agnhost,
#       CMD pause.
#   kitten, nautilus     agnhost + the picture and data.json of test/images/<name>/html; CMD test-webserver.
#   busybox              upstream BusyBox's applets (build-busybox.sh: Debian's drops environment
#                        variables that are not shell identifiers); CMD sh.  nonroot: busybox, USER 1234.
#   nonewprivs           busybox + /usr/local/bin/nnp, setuid; CMD nnp.
#   nginx (and NginxNew) busybox httpd on :80 serving /usr/share/nginx/html (a shell that exits on SIGTERM
#                        as nginx does); the specs only need a long-running web server.
#   glibc-dns-testing (1.35: jessie-dnsutils)  the same tools as agnhost (the DNS probes use dig and getent).
#   sample-apiserver     /sample-apiserver of this release's k8s.io/sample-apiserver.
#   etcd                 /usr/local/bin/etcd: the bed's etcd build (build-etcd.sh), whatever tag the
#                        release asks for (the aggregator spec runs it as a plain local store).
#   pause                images.sh's pause archives (a tag of the versions table).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
GOMODCACHE="${GOMODCACHE:-$CACHE/go/mod}"
BIN="$CACHE/conformance/$K8S_VERSION/bin"
OUT="$CACHE/conformance/$K8S_VERSION/images"
ETCD_BIN="$CACHE/etcd/${ETCD_VERSION:-v3.6.16}/bin/etcd"
SRC="$GOMODCACHE/k8s.io/kubernetes@$K8S_VERSION"
MANIFEST="$SRC/test/utils/image/manifest.go"
REPO=registry.k8s.io
BUSYBOX="${BUSYBOX:-$CACHE/busybox/${BUSYBOX_VERSION:-1.37.0}/bin/busybox}"

log() { printf '[conformance-images %s] %s\n' "$(date +%T)" "$*" >&2; }
# shellcheck source=test/bed/image-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/image-lib.sh"
[[ -f $MANIFEST ]] || { log "missing $MANIFEST: run build-conformance.sh (it downloads k8s.io/kubernetes@$K8S_VERSION)"; exit 1; }
for f in "$BIN/agnhost" "$BIN/nnp" "$BIN/sample-apiserver" "$ETCD_BIN" "$BUSYBOX" /usr/bin/dig /usr/bin/getent /usr/bin/curl /usr/bin/nc.openbsd; do
  [[ -x $f ]] || { log "missing $f (build-conformance.sh, build-etcd.sh, build-busybox.sh; apt-get install bind9-dnsutils curl netcat-openbsd)"; exit 1; }
done
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
tmp="$(mktemp -d /tmp/kubeception-cimages.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
# The archives hold this busybox: built with another one (an older cache), they are built again.
stamp="$(sha256sum "$BUSYBOX" | cut -d' ' -f1)"
if [[ $(cat "$OUT/.busybox" 2>/dev/null) != "$stamp" ]]; then
  log "busybox changed: the images are built again"
  rm -f "$OUT"/*.tar
  echo "$stamp" >"$OUT/.busybox"
fi

# ref ID → the image manifest.go names for that ImageID ("" if the release has none).
declare -A REGISTRY=()
while read -r key value; do REGISTRY[$key]="$value"; done < <(
  awk '/initRegistry = RegistryList\{/{p=1; next} p && /^\t\}/{p=0} p && /:/{gsub(/[",]/, ""); sub(/:$/, "", $1); print $1, $2}' "$MANIFEST")
ref() {
  local line; line="$(grep -E "^\s*configs\[$1\] = Config\{" "$MANIFEST" || true)"
  [[ -n $line ]] || return 0
  local reg name tag
  reg="$(sed -E 's/.*Config\{list\.([A-Za-z0-9]+), .*/\1/' <<<"$line")"
  name="$(sed -E 's/.*, "([^"]+)", "([^"]+)"\}.*/\1/' <<<"$line")"
  tag="$(sed -E 's/.*, "([^"]+)", "([^"]+)"\}.*/\2/' <<<"$line")"
  [[ -n ${REGISTRY[$reg]:-} ]] || { log "unknown registry list.$reg in $MANIFEST"; exit 1; }
  printf '%s/%s:%s' "${REGISTRY[$reg]}" "$name" "$tag"
}

e2e_tools() { # ROOT: busybox applets and glibc tools the specs exec in their containers
  local root="$1"
  base_files "$root"
  busybox_links "$root"
  copy_with_libs "$root" /usr/bin/dig /usr/bin/getent /usr/bin/curl /usr/bin/nc.openbsd /bin/bash /usr/bin/dash
  ln -sf nc.openbsd "$root/usr/bin/nc"
  # Debian's busybox-static runs its own applets before PATH (`nc` in `sh -c` would be busybox's, which
  # has no -u/-t/-z: seen failing the Services and node-pod UDP specs), so /bin/sh is dash here.
  ln -sf /usr/bin/dash "$root/bin/sh"
  local f; for f in /etc/services /etc/protocols; do [[ -f $f ]] && cp "$f" "$root/etc/"; done
  return 0
}
fill_agnhost() {
  local root="$1"
  e2e_tools "$root"
  cp "$BIN/agnhost" "$root/agnhost" && ln -sf agnhost "$root/agnhost-2"
  cp "$CACHE/addons/coredns/$COREDNS_VERSION/coredns" "$root/coredns"
  cp "$SRC/test/images/agnhost/porter/localhost.crt" "$SRC/test/images/agnhost/porter/localhost.key" "$root/"
  mkdir -p "$root/uploads"
  printf 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n' >>"$root/etc/passwd"
  printf 'user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' >>"$root/etc/group"
}
picture=""
fill_picture() { fill_agnhost "$1"; cp "$SRC/test/images/$picture/html/"* "$1/"; }
fill_busybox() { base_files "$1"; busybox_links "$1"; }
fill_nonewprivs() { fill_busybox "$1"; mkdir -p "$1/usr/local/bin"; cp "$BIN/nnp" "$1/usr/local/bin/nnp"; chmod 4755 "$1/usr/local/bin/nnp"; }
fill_nginx() {
  fill_busybox "$1"
  mkdir -p "$1/usr/share/nginx/html"
  printf '<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1></body></html>\n' >"$1/usr/share/nginx/html/index.html"
}
fill_dns() { e2e_tools "$1"; }
fill_sample_apiserver() { base_files "$1"; cp "$BIN/sample-apiserver" "$1/sample-apiserver"; }
fill_etcd() { base_files "$1"; cp "$ETCD_BIN" "$1/usr/local/bin/etcd"; }

: >"$tmp/images.txt"
# image ID [extra ID…] ; FILLER USER CMD ENTRYPOINT…
image() {
  local ids=() id
  while [[ $1 != ';' ]]; do ids+=("$1"); shift; done; shift
  local filler="$1" user="$2" cmd="$3"; shift 3
  local refs=() r
  for id in "${ids[@]}"; do r="$(ref "$id")"; [[ -n $r ]] && refs+=("$r"); done
  ((${#refs[@]})) || return 0
  local main="${refs[0]}" name tag dest
  name="${main%:*}"; name="${name##*/}"; tag="${main##*:}"
  dest="$OUT/$name-$tag.tar"
  if [[ ! -s $dest ]]; then
    IMAGE_REF="$main" IMAGE_EXTRA_REFS="${refs[*]:1}" IMAGE_USER="$user" IMAGE_CMD="$cmd" build_image "$name" "$tag" "$dest" "$filler" "$@"
  fi
  echo "$dest ${refs[*]}" >>"$tmp/images.txt"
}

COREDNS_VERSION="$(grep -m1 -oE 'CoreDNSVersion = "v[0-9.]+"' "$SRC/cmd/kubeadm/app/constants/constants.go" | grep -oE 'v[0-9.]+')"
[[ -x "$CACHE/addons/coredns/$COREDNS_VERSION/coredns" ]] || { log "missing CoreDNS $COREDNS_VERSION: COREDNS_VERSION=$COREDNS_VERSION bash test/bed/build-addons.sh"; exit 1; }

image Agnhost AgnhostPrev ';' fill_agnhost 0 pause /agnhost
picture=kitten image Kitten ';' fill_picture 0 test-webserver /agnhost
picture=nautilus image Nautilus ';' fill_picture 0 test-webserver /agnhost
image BusyBox ';' fill_busybox 0 sh
image NonRoot ';' fill_busybox 1234 sh
image Nonewprivs ';' fill_nonewprivs 0 nnp
image Nginx NginxNew ';' fill_nginx 0 "" /bin/sh -c 'trap "exit 0" TERM INT; httpd -f -p 80 -h /usr/share/nginx/html & wait'
image GlibcDnsTesting ';' fill_dns 0 sh
image JessieDnsutils ';' fill_dns 0 sh
image APIServer ';' fill_sample_apiserver 0 "" /sample-apiserver
image Etcd ';' fill_etcd 0 "" /usr/local/bin/etcd
pause="$(ref Pause)"
pause_tar="$CACHE/images/pause-${pause##*:}.tar"
[[ -s $pause_tar ]] || { log "missing $pause_tar: PAUSE_VERSIONS=${pause##*:} bash test/bed/images.sh"; exit 1; }
echo "$pause_tar $pause" >>"$tmp/images.txt"
mv "$tmp/images.txt" "$OUT/images.txt"
log "$(wc -l <"$OUT/images.txt") images for $K8S_VERSION listed in $OUT/images.txt"
