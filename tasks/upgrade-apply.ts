/**
 * upgrade-apply: moves the self-hosted control plane to a new Kubernetes version, done by Kubernetes
 * itself (surge rollouts of the control-plane DaemonSet and Deployments). Run as
 * `kubeception upgrade apply vX.Y.Z [--timeout 5m]`; the run's kubernetesVersion is the target.
 * Copy this file to ./tasks/upgrade-apply.ts on a site to customise it.
 *
 * upgrade-preflight → etcd-snapshot → backup-objects → control-plane → verify →
 * addon/kube-proxy → addon/coredns → apiserver-recovery → upgrade-done
 */
import { step, task, type Task } from 'kubeception/dsl';
import { applyCoreDNS, applyKubeProxy, backupObjects, disabledEarlier, ensureRecovery, etcdSnapshot, finishUpgrade, upgradeControlPlane, upgradePreflight, verifyUpgrade, type UpgradeApplyContext } from 'kubeception/steps';

export default task('upgrade-apply', [
  step('upgrade-preflight').title('upgrade-preflight: version-skew policy, the journal of an unfinished upgrade').run(upgradePreflight),
  step('etcd-snapshot').needs('upgrade-preflight').title('etcd-snapshot: etcdctl snapshot save into the backup directory').timeout(600_000).run(etcdSnapshot),
  step('backup-objects').needs('upgrade-preflight').title('backup-objects: the live control-plane and addon objects, as YAML').run(backupObjects),
  step('control-plane').needs('etcd-snapshot', 'backup-objects').title('control-plane: kube-apiserver, kube-controller-manager, kube-scheduler rolled one at a time (rolled back on failure)').timeout(3_600_000).run(upgradeControlPlane),
  step('verify').needs('control-plane').title('verify: every kube-apiserver serves the target, ready 10 times in a row').timeout(300_000).run(verifyUpgrade),
  step('addon/kube-proxy').needs('verify').title('addon/kube-proxy: the kube-proxy DaemonSet at the target').skipIf(disabledEarlier('kube-proxy')).run(applyKubeProxy),
  step('addon/coredns').needs('addon/kube-proxy').title("addon/coredns: CoreDNS at the target's version").skipIf(disabledEarlier('coredns')).run(applyCoreDNS),
  step('apiserver-recovery').needs('verify').title('apiserver-recovery: the last-known-good kube-apiserver manifest refreshed').timeout(300_000).run(ensureRecovery),
  step('upgrade-done').needs('addon/coredns', 'apiserver-recovery').title('upgrade-done: the journal closed; what to do next').run(finishUpgrade),
]) satisfies Task<UpgradeApplyContext>;
