#!/usr/bin/env bash
# Build kubeception's own image, localhost/kubeception:v<package.json version>, with no container engine:
# the same layout as the Containerfile (/app with bin/kubeception.js, the precompiled JavaScript build
# dist/, package.json and the production node_modules without the TypeScript loader — nothing is
# compiled in the pod; node at /usr/local/bin/node; user 65534; entrypoint `node /app/bin/kubeception.js`),
# but node is this machine's /usr/bin/node plus the libraries ldd names and the loader (and, for the node
# upgrade agent, the machine's dash as /bin/sh, mkdir, cp, cat, rm and chroot), and node_modules
# is the checkout's, minus devDependencies and tsx/esbuild. Runs `npm run build` first (≈2 s).
#
# Output: a docker-archive for `ctr -n k8s.io images import` (the `localhost/` prefix survives containerd's
# name normalisation), at $KUBECEPTION_CACHE/images/kubeception/kubeception-v<version>-<key>.tar, where
# <key> hashes this script, the node binary and every runtime file: an edit under lib/ rebuilds it.
# Prints the archive's path on stdout (logs go to stderr). A no-op when the archive exists.
# Needs root (file ownership in the layer), umoci, skopeo, npm (for `npm ls`; nothing is downloaded).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${KUBECEPTION_CACHE:-/var/cache/kubeception}"
OUT="$CACHE/images/kubeception"
NODE_BIN="$(readlink -f "${NODE_BIN:-$(command -v node)}")"
VERSION="$(node -p "require(process.argv[1]).version" "$REPO/package.json")"
IMAGE="localhost/kubeception:v$VERSION"
# What the Containerfile copies into /app; keep the two lists equal.
RUNTIME=(package.json bin/kubeception.js dist)
# Never needed at run time (the build is JavaScript; nothing reads type declarations, sources or maps).
PRUNE=(-name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.ts' -o -name '*.mts' -o -name '*.cts')
# The TypeScript loader and its compiler: bin/kubeception.js needs them only for a stale checkout.
LOADER=(node_modules/tsx node_modules/esbuild node_modules/@esbuild node_modules/get-tsconfig node_modules/resolve-pkg-maps)

log() { printf '[kubeception-image %s] %s\n' "$(date +%T)" "$*" >&2; }

cache_key() {
  {
    sha256sum "${BASH_SOURCE[0]}" "$NODE_BIN" | cut -d' ' -f1
    (cd "$REPO" && find "${RUNTIME[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
  } | sha256sum | cut -c1-16
}

# Top-level dirs under node_modules of every installed production package (nested ones come with them).
production_packages() {
  (cd "$REPO" && npm ls --omit=dev --all --parseable 2>/dev/null || true) |
    sed -n "s#^$REPO/##p" | grep '^node_modules/' | grep -v '^node_modules/.*/node_modules/' |
    grep -vxF -f <(printf '%s\n' "${LOADER[@]}") | grep -v '^node_modules/@esbuild/' | LC_ALL=C sort -u
}

fill_rootfs() {
  local root="$1" lib
  mkdir -p "$root/etc" "$root/tmp" "$root/usr/local/bin" "$root/app"
  chmod 1777 "$root/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  install -m 0755 "$NODE_BIN" "$root/usr/local/bin/node"
  # What the Containerfile's Debian base gives the node upgrade agent's script
  # (manifests/node-upgrade-controller.ts: /bin/sh, mkdir, cp, cat, rm, chroot): this machine's.
  local -A tools=([/bin/sh]=/bin/dash [/bin/mkdir]=mkdir [/bin/cp]=cp [/bin/cat]=cat [/bin/rm]=rm [/usr/sbin/chroot]=chroot)
  local dst bins=("$NODE_BIN")
  mkdir -p "$root/bin" "$root/usr/sbin"
  for dst in "${!tools[@]}"; do
    bins+=("$(readlink -f "$(command -v "${tools[$dst]}")")")
    install -m 0755 "${bins[-1]}" "$root$dst"
  done
  # The loader and the libraries node and those tools link (libc, libstdc++, libm, libgcc_s, libacl,
  # libselinux…), at the paths ldd reports.
  while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done < <(for b in "${bins[@]}"; do ldd "$b"; done | grep -oE '/[^ ]+' | sort -u)
  (cd "$REPO" && cp -a --parents "${RUNTIME[@]}" "$root/app/")
  local pkgs; mapfile -t pkgs < <(production_packages)
  ((${#pkgs[@]})) || { log "no production packages in $REPO/node_modules: run npm ci first"; exit 1; }
  # One tar stream keeps hard links (esbuild's binary is linked from @esbuild/<platform>).
  tar -C "$REPO" -cf - "${pkgs[@]}" | tar -C "$root/app" -xf -
  find "$root/app/node_modules" -type f \( "${PRUNE[@]}" \) -delete
  chown -R 0:0 "$root/app"
  chmod -R a+rX,go-w "$root/app"
}

build() {
  local dest="$1" layout="$tmp/oci" bundle="$tmp/bundle"
  umoci init --layout "$layout"
  umoci new --image "$layout:v$VERSION"
  umoci unpack --image "$layout:v$VERSION" "$bundle" >/dev/null
  fill_rootfs "$bundle/rootfs"
  umoci repack --image "$layout:v$VERSION" "$bundle"
  umoci config --image "$layout:v$VERSION" --os linux --architecture amd64 \
    --config.user 65534:65534 --config.workingdir /app \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --config.env NODE_ENV=production \
    --config.entrypoint node --config.entrypoint /app/bin/kubeception.js \
    --config.label "org.opencontainers.image.title=kubeception" --config.label "org.opencontainers.image.version=$VERSION"
  rm -f "$dest.tmp"
  skopeo copy --quiet "oci:$layout:v$VERSION" "docker-archive:$dest.tmp:$IMAGE"
  mv "$dest.tmp" "$dest"
}

node "$REPO/scripts/build.mjs" >&2
mkdir -p "$OUT"
tmp="$(mktemp -d /tmp/kubeception-image.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
exec 9>"$OUT/.lock"
flock 9
dest="$OUT/kubeception-v$VERSION-$(cache_key).tar"
if [[ ! -s "$dest" ]]; then
  start=$SECONDS
  build "$dest"
  log "built $IMAGE in $((SECONDS - start)) s: $dest ($(du -h "$dest" | cut -f1))"
  # Older builds: keep those of the last 10 minutes (a caller may be about to import one), drop the rest.
  find "$OUT" -maxdepth 1 -name 'kubeception-v*.tar' ! -path "$dest" -mmin +10 -delete
fi
printf '%s\n' "$dest"
