/**
 * reset: undoes what kubeception did on this host (control plane or worker), in kubeadm reset's
 * safe order, then reports what remains (exit 1 if anything of ours does). Foreign files are
 * reported, never deleted. Run as `kubeception reset [--dry-run] [--keep-etcd-data] [--force] [--output json]`.
 *
 * remove-etcd-member → remove-node → stop-kubelet → remove-containers → unmount → stop-etcd → remove-files →
 * remove-network → residue-report
 */
import { step, task, type Task } from 'kubeception/dsl';
import { removeContainers, removeEtcdMember, removeFiles, removeNetwork, removeNode, reportResidue, stopEtcd, stopKubelet, unmount, type ResetContext } from 'kubeception/steps';

export default task('reset', [
  step('remove-etcd-member').title("remove-etcd-member: this control-plane node's etcd member leaves the cluster (--force to leave two)").timeout(60_000).run(removeEtcdMember),
  step('remove-node').needs('remove-etcd-member').title('remove-node: cordon and delete this Node while the API answers').timeout(60_000).run(removeNode),
  step('stop-kubelet').needs('remove-node').title('stop-kubelet: stop and disable the recovery watcher and the kubelet').run(stopKubelet),
  step('remove-containers').needs('stop-kubelet').title("remove-containers: the kubelet's containers and pod network namespaces (containerd)").timeout(300_000).run(removeContainers),
  step('unmount').needs('remove-containers').title("unmount: the kubelet's volume mounts").run(unmount),
  step('stop-etcd').needs('unmount').title('stop-etcd: stop and disable the snapshot timer and etcd').run(stopEtcd),
  step('remove-files').needs('stop-etcd').title('remove-files: PKI, kubeconfigs, manifests, kubelet state, units, etcd data (unless --keep-etcd-data)').run(removeFiles),
  step('remove-network').needs('remove-containers').title('remove-network: KUBE-*/CNI-*/FLANNEL* chains, CNI and flannel links, routes to the cluster ranges').run(removeNetwork),
  step('residue-report').needs('remove-files', 'remove-network').title('residue-report: nothing of kubeception remains').run(reportResidue),
]) satisfies Task<ResetContext>;
