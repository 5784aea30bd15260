# Helpers of the bed's image scripts (images.sh, conformance-images.sh): sourced, not run. They expect
# $tmp (a scratch dir), $REPO (the default registry of build_image), $BUSYBOX (a static busybox: the caller says which) and
# a log function. Images are built with umoci from files of this machine and named with skopeo, as
# docker-archive tarballs that `ctr -n k8s.io images import` names exactly as a kubelet asks for them.

# Minimal files a distroless-like image has.
base_files() {
  local root="$1"
  mkdir -p "$root/etc" "$root/tmp" "$root/var/run" "$root/usr/local/bin"
  chmod 1777 "$root/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  if [[ -d /etc/ssl/certs ]]; then mkdir -p "$root/etc/ssl/certs" && cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" 2>/dev/null || true; fi
}

# Copies a dynamically linked file and every library it needs (ldd), keeping paths.
copy_with_libs() {
  local root="$1"; shift
  local f lib
  for f in "$@"; do
    mkdir -p "$root$(dirname "$f")"
    cp -a "$f" "$root$f"
    [[ -L "$f" ]] && { local t; t="$(readlink -f "$f")"; mkdir -p "$root$(dirname "$t")"; cp -a "$t" "$root$t"; f="$t"; }
    while read -r lib; do
      [[ -e "$root$lib" ]] && continue
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done < <(ldd "$f" 2>/dev/null | grep -oE '/[^ ]+' | sort -u)
  done
}

# build NAME TAG DEST ROOTFS-FILLER ENTRYPOINT... → docker-archive at DEST, named $REPO/NAME:TAG, or $IMAGE_REF
# if set (and also $IMAGE_EXTRA_REFS, space-separated, in the same archive); the image's user is $IMAGE_USER
# (default 0), its CMD $IMAGE_CMD (space-separated words, default none).
build_image() {
  local name="$1" tag="$2" dest="$3" filler="$4"; shift 4
  local ref="${IMAGE_REF:-$REPO/$name:$tag}"
  local layout="$tmp/$name-oci" bundle="$tmp/$name-bundle"
  rm -rf "$layout" "$bundle"
  umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  umoci unpack --image "$layout:$tag" "$bundle" >/dev/null
  "$filler" "$bundle/rootfs"
  umoci repack --image "$layout:$tag" "$bundle"
  local cfg=(--image "$layout:$tag" --config.user "${IMAGE_USER:-0}" --config.workingdir /
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    --os linux --architecture amd64)
  local e; for e in "$@"; do cfg+=(--config.entrypoint "$e"); done
  for e in ${IMAGE_CMD:-}; do cfg+=(--config.cmd "$e"); done
  umoci config "${cfg[@]}"
  rm -f "$dest.tmp"
  local extra=() r; for r in ${IMAGE_EXTRA_REFS:-}; do extra+=(--additional-tag "$r"); done
  skopeo copy --quiet "${extra[@]}" "oci:$layout:$tag" "docker-archive:$dest.tmp:$ref"
  mv "$dest.tmp" "$dest"
  rm -rf "$layout" "$bundle"
  log "built $ref ($(du -h "$dest" | cut -f1))"
}

# iptables(-save,-restore), ip6tables…, nft, ip, conntrack from the machine, with `iptables*` → nft.
iptables_tools() {
  local root="$1"
  # kube-proxy (and flanneld) run iptables(-save,-restore), ip6tables… and, in nftables mode, nft: take the machine's.
  local tools=() t
  for t in /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/nft /usr/sbin/ip /usr/sbin/conntrack; do
    [[ -e "$t" ]] && tools+=("$t")
  done
  copy_with_libs "$root" "${tools[@]}"
  local x
  for x in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sf xtables-nft-multi "$root/usr/sbin/$x"
    ln -sf xtables-nft-multi "$root/usr/sbin/$x-nft"
    ln -sf xtables-legacy-multi "$root/usr/sbin/$x-legacy"
  done
  # iptables loads its match/target extensions with dlopen: ldd does not see them.
  local xdir
  for xdir in /usr/lib/x86_64-linux-gnu/xtables /usr/lib/xtables; do
    if [[ -d "$xdir" ]]; then
      mkdir -p "$root$xdir"
      cp -a "$xdir/." "$root$xdir/"
      copy_with_libs "$root" "$xdir"/*.so
    fi
  done
  # etc/ethertypes etc. as iptables expects
  [[ -f /etc/ethertypes ]] && cp /etc/ethertypes "$root/etc/"
  [[ -f /etc/protocols ]] && cp /etc/protocols "$root/etc/"
  return 0
}

busybox_links() { # ROOT APPLET... : /bin/busybox and /bin/<applet> links (all applets if none given)
  local root="$1" a; shift
  (($#)) || set -- $("$BUSYBOX" --list)
  mkdir -p "$root/bin"
  cp "$BUSYBOX" "$root/bin/busybox"
  for a in "$@"; do [[ $a == busybox || -e "$root/bin/$a" ]] || ln -s busybox "$root/bin/$a"; done
}
