# The throw-away main module the bed builds Kubernetes binaries in (sourced by build-k8s.sh and
# build-conformance.sh, so both compile with the same module graph, tags and stamps and share GOCACHE).
# It requires k8s.io/kubernetes and replaces every staging module (k8s.io/api, k8s.io/client-go, ...)
# with its published v0.<minor>.<patch> twin, since kubernetes' own go.mod points them at ./staging,
# which a module download does not contain. Expects GO, GOMODCACHE and a log function.

# write_k8s_module DIR VERSION: writes DIR/go.mod for k8s.io/kubernetes@VERSION (kept when it is already that).
write_k8s_module() {
  local dir="$1" version="$2"
  local minor_patch="${version#v1.}"       # 34.4
  local staging_version="v0.$minor_patch"  # v0.34.4
  local gomod goline m
  local -a staging
  mkdir -p "$dir"
  if [[ -s "$dir/go.mod" ]] && grep -q "k8s.io/kubernetes $version" "$dir/go.mod"; then return 0; fi
  log "resolving k8s.io/kubernetes@$version"
  gomod="$("$GO" mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -f "$gomod" ]] || { log "cannot find go.mod of k8s.io/kubernetes@$version"; exit 1; }
  # Staging modules are the ones kubernetes replaces with ./staging/src/k8s.io/<name>.
  mapfile -t staging < <(grep -oE 'k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$gomod" | awk '{print $1}' | sort -u)
  ((${#staging[@]} > 10)) || { log "found only ${#staging[@]} staging modules in $gomod"; exit 1; }
  goline="$(grep -m1 -E '^go [0-9]' "$gomod")"
  {
    echo "module kubeception.local/k8s-build"
    echo
    echo "$goline"
    echo
    echo "require k8s.io/kubernetes $version"
    echo
    echo "replace ("
    for m in "${staging[@]}"; do echo "	$m => $m $staging_version"; done
    echo ")"
  } >"$dir/go.mod"
  # godebug lines of kubernetes' go.mod keep the runtime behaviour the release was tested with.
  if grep -qE '^godebug' "$gomod"; then
    awk '/^godebug \(/{p=1} p{print} p&&/^\)/{p=0} /^godebug [a-z]/{print}' "$gomod" >>"$dir/go.mod"
  fi
  rm -f "$dir/go.sum"
  log "module with ${#staging[@]} staging replaces written to $dir/go.mod"
}

# k8s_ldflags VERSION: the version stamps, as hack/lib/version.sh sets them (`kubelet --version` → VERSION).
k8s_ldflags() {
  local version="$1" minor_patch="${1#v1.}" pkg flags="-s -w"
  local build_date; build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=${minor_patch%%.*}"
    flags+=" -X $pkg.gitCommit=0000000000000000000000000000000000000000 -X $pkg.gitTreeState=clean"
    flags+=" -X $pkg.buildDate=$build_date"
  done
  printf '%s' "$flags"
}
