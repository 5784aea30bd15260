#!/usr/bin/env bash
# The README's first command: on a fresh machine (as root), set up the bed, boot a fresh bed host
# with systemd, containerd, etcd and a kubelet, run `npx kubeception run bootstrap` inside it as an
# operator would, and end with `kubectl get nodes`. The host stays up for you to explore:
#   npx tsx test/bed/host.ts exec demo -- kubectl --kubeconfig /etc/kubernetes/admin.conf get pods -A
#   npx tsx test/bed/host.ts down demo        # remove it (and everything it left)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
bash test/bed/setup.sh
host() { npx tsx test/bed/host.ts "$@"; }
host down demo >/dev/null 2>&1 || true
host up demo --kubelet --kubeception-image
host exec demo -- sh -c 'mkdir -p /root/site && echo "export default { distro: \"debian\" };" > /root/site/kubeception.config.ts'
printf '\n=== npx kubeception run bootstrap (inside bed host "demo")\n'
host exec demo --cwd "$repo" -- sh -c "cd /root/site && npx --prefix '$repo' kubeception run bootstrap"
printf '\n=== kubectl get nodes\n'
for i in $(seq 60); do
  host exec demo -- kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes --no-headers 2>/dev/null | grep -q ' Ready ' && break
  sleep 2
done
host exec demo -- kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes -o wide
