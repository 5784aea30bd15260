#!/usr/bin/env bash
# The README's first command: on a fresh machine (as root), set up the bed, boot a fresh bed host
# with systemd, containerd, etcd and a kubelet (and no CNI config), run `npx kubeception run bootstrap`
# inside it as an operator would (flannel and CoreDNS included), and end with `kubectl get nodes` and the
# pods. It never touches a host it did not create: it boots a new host named `demo` (or demo2 … demo9
# when that name is taken) and says which. The host stays up for you to explore:
#   npx tsx test/bed/host.ts exec demo -- kubectl --kubeconfig /etc/kubernetes/admin.conf get pods -A
#   npx tsx test/bed/host.ts down demo        # remove it (and everything it left)
# KUBECEPTION_BED_READY=1 skips the bed setup (already done).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
[[ ${KUBECEPTION_BED_READY:-} == 1 ]] || KUBECEPTION_BED_UPGRADE=0 bash test/bed/setup.sh
host() { npx tsx test/bed/host.ts "$@"; }
# A name no existing bed host has (another user's `demo` is never stopped or replaced).
taken=$(host list | awk '{print $1}')
demo=
for n in demo demo2 demo3 demo4 demo5 demo6 demo7 demo8 demo9; do
  grep -qx "$n" <<<"$taken" || { demo=$n; break; }
done
if [[ -z $demo ]]; then
  echo "demo.sh: bed hosts demo … demo9 all exist; remove one you made (npx tsx test/bed/host.ts down NAME)" >&2
  exit 2
fi
host up "$demo" --kubelet --cni none --kubeception-image
# The bed's flannel CNI plugin image is not the upstream one (see test/bed/README.md): name it.
host exec "$demo" -- sh -c 'mkdir -p /root/site && echo "export default { distro: \"debian\", networking: { flannel: { cniPluginImage: \"localhost/flannel-cni-plugin:v0.9.1\" } } };" > /root/site/kubeception.config.ts'
printf '\n=== npx kubeception run bootstrap (inside the new bed host "%s")\n' "$demo"
host exec "$demo" --cwd "$repo" -- sh -c "cd /root/site && npx --prefix '$repo' kubeception run bootstrap"
printf '\n=== kubectl get nodes\n'
for i in $(seq 60); do
  host exec "$demo" -- kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes --no-headers 2>/dev/null | grep -q ' Ready ' && break
  sleep 2
done
host exec "$demo" -- kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes -o wide
printf '\n=== kubectl get pods -A (CoreDNS becomes Ready once flannel is up)\n'
host exec "$demo" -- kubectl --kubeconfig /etc/kubernetes/admin.conf wait -n kube-system --for=condition=Available deployment/coredns --timeout=180s || true
host exec "$demo" -- kubectl --kubeconfig /etc/kubernetes/admin.conf get pods -A -o wide
printf '\nThe host "%s" stays up. Remove it with: npx tsx test/bed/host.ts down %s\n' "$demo" "$demo"
