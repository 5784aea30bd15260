#!/usr/bin/env bash
# Build upstream BusyBox (static, its defconfig) for the conformance images, cached by version.
#
#   bash test/bed/build-busybox.sh        # builds what is missing; a no-op when it exists
#
# Why not Debian's busybox-static: upstream's e2e busybox image (test/images/busybox: the official
# busybox:1.37.0) runs upstream's ash, which passes environment variables whose names are not shell
# identifiers through to the commands it runs. Debian reverts that (debian/patches/
# revert-9c143ce52da11ec3d21a3491c3749841d3dc10f0.patch), so `sh -c env` in the image dropped `data-1`
# and the four [Conformance] specs of RelaxedEnvironmentVariableValidation (ConfigMap and Secret "via the
# environment", "with various prefixes") failed on the bed (2026-12-03, v1.37.2, fast tier).
# Debian's build also turns on FEATURE_SH_STANDALONE (its applets before PATH); the defconfig does not.
#
# Env: KUBECEPTION_CACHE (default /var/cache/kubeception), BUSYBOX_VERSION (default 1.37.0, upstream's
#      image), BUSYBOX_SUITE (default trixie: the Debian suite whose source package carries that version).
# Output: $KUBECEPTION_CACHE/busybox/$BUSYBOX_VERSION/bin/busybox.
# How: the upstream tarball is the `.orig.tar.bz2` of Debian's source package (apt-get source
#      --download-only from a private sources list on the mirror this machine's apt already uses; no
#      Debian patch applied), `make defconfig`, CONFIG_STATIC=y, CONFIG_TC off (its CBQ code does not
#      build against current kernel headers), `make busybox`. Needs gcc, make and libc6-dev.
set -euo pipefail

BUSYBOX_VERSION="${BUSYBOX_VERSION:-1.37.0}"
BUSYBOX_SUITE="${BUSYBOX_SUITE:-trixie}"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
OUT="$CACHE/busybox/$BUSYBOX_VERSION/bin"

log() { printf '[build-busybox %s] %s\n' "$(date +%T)" "$*" >&2; }

if [[ -x $OUT/busybox ]]; then log "busybox $BUSYBOX_VERSION cached in $OUT"; exit 0; fi
mkdir -p "$OUT"
exec 9>"$CACHE/busybox/.lock"
flock 9
[[ -x $OUT/busybox ]] && exit 0

work="$(mktemp -d /tmp/kubeception-busybox.XXXXXX)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
# The mirror this machine's apt uses (first URIs of the Debian archive in its deb822 sources).
uri="$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v -- '-security' | head -1)"
[[ -n $uri ]] || { log "no Debian archive URI in /etc/apt/sources.list.d/*.sources"; exit 1; }
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/parts" "$work/src"
printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" "$BUSYBOX_SUITE" >"$work/parts/src.sources"
apt_opts=(-q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/parts" -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache" -o APT::Sandbox::User=root)
log "source package busybox ($BUSYBOX_SUITE)"
apt-get "${apt_opts[@]}" update >/dev/null
(cd "$work/src" && apt-get "${apt_opts[@]}" source --download-only "busybox" >/dev/null)
orig="$work/src/busybox_$BUSYBOX_VERSION.orig.tar.bz2"
[[ -s $orig ]] || { log "the $BUSYBOX_SUITE source package has no busybox_$BUSYBOX_VERSION.orig.tar.bz2 ($(ls "$work/src" | tr '\n' ' '))"; exit 1; }
tar -C "$work" -xjf "$orig"
cd "$work/busybox-$BUSYBOX_VERSION"
make defconfig >/dev/null
sed -i 's/^# CONFIG_STATIC is not set/CONFIG_STATIC=y/; s/^CONFIG_TC=y/# CONFIG_TC is not set/' .config
make -j"$(nproc)" busybox >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }
# The property this build exists for: a variable whose name is not an identifier reaches `sh -c env`.
env -i 'data-1=value-1' ./busybox sh -c env | grep -qx 'data-1=value-1' || { log "the built ash drops data-1 from the environment"; exit 1; }
install -m 0755 busybox "$OUT/busybox.part" && mv "$OUT/busybox.part" "$OUT/busybox"
log "busybox $BUSYBOX_VERSION built in $((SECONDS - start)) s: $OUT/busybox"
