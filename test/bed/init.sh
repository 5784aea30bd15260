#!/bin/sh
# PID 1 of a bed host (copied into each host as /usr/local/lib/kubeception-bed/init).
# 1. nspawn mounts the v1 cgroup controllers read-only; containerd/runc and the kubelet need them
#    writable, and systemd must see them writable when it starts (remounting later is too late).
# 2. The kubelet wants vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1 (and a few more)
#    and fails if it must change them but /proc/sys is read-only. These knobs are global to the VM, so
#    the bed does not change them: it bind-mounts a file holding the expected value over each one whose
#    value differs, inside this host only (see test/bed/README.md, "kernel tunables").
# 3. / becomes rshared, as on a real node, so that the kubelet's and runc's mount propagation works.
# 4. A "kubic" host (test/bed/kubic.ts) has a read-only /usr, as a transactional system does between
#    snapshots: /usr (with the binds nspawn made below it) is bound onto itself and made read-only,
#    when the flag file below exists (written into the host's upper dir before its first boot). Before
#    that, the kubelet of the snapshot the host's transactional-update stand-in made (a path in
#    /var/lib/kubeception-bed/snapshot/kubelet) is bound over /usr/bin/kubelet: a boot applies it.
# Then it becomes systemd.
set -u
awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts | while read -r m; do
  mount -o remount,bind,rw "$m" || echo "kubeception-bed init: cannot remount $m rw" >&2
done
dir=/usr/local/lib/kubeception-bed/sysctl
if [ -d "$dir" ]; then
  for f in "$dir"/*; do
    [ -f "$f" ] || continue
    key=$(basename "$f" | tr . /)
    target=/proc/sys/$key
    [ -e "$target" ] || continue
    if [ "$(cat "$target")" != "$(cat "$f")" ]; then
      mount --bind "$f" "$target" || echo "kubeception-bed init: cannot shadow $target" >&2
    fi
  done
fi
mount --make-rshared /
if [ -e /usr/local/lib/kubeception-bed/read-only-usr ]; then
  snap=/var/lib/kubeception-bed/snapshot/kubelet
  if [ -f "$snap" ] && [ -x "$(cat "$snap")" ]; then
    mount --bind "$(cat "$snap")" /usr/bin/kubelet || echo "kubeception-bed init: cannot apply the snapshot's kubelet" >&2
  fi
  mount --rbind /usr /usr && mount -o remount,bind,ro /usr || echo "kubeception-bed init: cannot make /usr read-only" >&2
fi
exec /lib/systemd/systemd "$@"
