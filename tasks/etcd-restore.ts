/**
 * etcd-restore: brings a single control-plane node back from one of its etcd snapshots
 * (`kubeception etcd snapshot save`), run as `kubeception etcd restore SNAPSHOT [--force] [--dry-run]`.
 * Everything that can refuse is checked first (restore-preflight: exit 2, nothing changed); then the
 * control plane stops, the snapshot's shared keys go where this host has none, the data dir is
 * restored (the old one moved aside, kept), and the bootstrap's own steps bring etcd, the bootstrap
 * control plane, the self-hosted one and the pivot back on the restored data.
 * Copy this file to ./tasks/etcd-restore.ts on a site to customise it; nothing runs at import time.
 *
 * restore-preflight → stop-control-plane → restore-pki → certs → kubeconfig → kubelet-config → restore-data-dir →
 * etcd → bootstrap-control-plane → kubelet-start → wait-bootstrap-control-plane → bootstrap-scheduler →
 * self-hosted-control-plane → wait-node-registered → mark-control-plane → recovery-watcher → etcd-snapshot-schedule →
 * wait-self-hosted-control-plane → apiserver-recovery → kubelet-pivot → remove-bootstrap-control-plane → restore-done
 */
import { step, task, type Task } from 'kubeception/dsl';
import {
  applyRestoredControlPlane,
  ensureEtcd,
  ensureEtcdSnapshotSchedule,
  ensureKubeconfigs,
  ensureKubeletConfig,
  ensureRecovery,
  ensureRecoveryWatcher,
  markControlPlane,
  nothingToHandOver,
  pivotKubelet,
  reconcileCerts,
  removeBootstrapControlPlane,
  restoreDataDir,
  restoreDone,
  restorePki,
  restorePreflight,
  selfHostedServing,
  startKubelet,
  stopControlPlane,
  waitBootstrapControlPlane,
  waitNodeRegistered,
  waitSelfHostedControlPlane,
  writeBootstrapControlPlane,
  writeBootstrapScheduler,
  type RestoreContext,
} from 'kubeception/steps';

export default task('etcd-restore', [
  step('restore-preflight')
    .title('restore-preflight: the snapshot verified (sha256, PKI, test restore); a serving cluster, other keys or an unsafe data dir refused')
    .timeout(300_000)
    .run(restorePreflight),
  step('stop-control-plane')
    .needs('restore-preflight')
    .title('stop-control-plane: the recovery watcher, the kubelet, every control-plane container, etcd')
    .timeout(120_000)
    .run(stopControlPlane),
  step('restore-pki').needs('stop-control-plane').title("restore-pki: the snapshot's shared keys where this host has none").run(restorePki),
  step('certs').needs('restore-pki').title('certs: reconcile the PKI').run(reconcileCerts),
  step('kubeconfig').needs('certs').title('kubeconfig: admin, controller-manager, scheduler, kubelet').run(ensureKubeconfigs),
  step('kubelet-config').needs('kubeconfig').title('kubelet-config: config.yaml, unit drop-in, kubeconfig target').run(ensureKubeletConfig),
  step('restore-data-dir')
    .needs('restore-pki')
    .title('restore-data-dir: the old data dir moved aside (kept), the snapshot restored as a new one-member cluster')
    .timeout(600_000)
    .run(restoreDataDir),
  step('etcd').needs('restore-data-dir', 'certs').title('etcd: configure, start through systemd, wait healthy').timeout(120_000).run(ensureEtcd),
  step('bootstrap-control-plane')
    .needs('certs', 'kubeconfig')
    .title('bootstrap-control-plane: static pods for the temporary kube-apiserver and kube-controller-manager')
    .skipIf(selfHostedServing)
    .run(writeBootstrapControlPlane),
  step('kubelet-start').needs('kubelet-config', 'bootstrap-control-plane').title('kubelet-start: enable and start the kubelet').run(startKubelet),
  step('wait-bootstrap-control-plane')
    .needs('kubelet-start', 'etcd')
    .title('wait-bootstrap-control-plane: bootstrap kube-apiserver ready')
    .skipIf(selfHostedServing)
    .run(waitBootstrapControlPlane),
  step('bootstrap-scheduler')
    .needs('wait-bootstrap-control-plane')
    .title('bootstrap-scheduler: static pod for the temporary kube-scheduler')
    .skipIf(selfHostedServing)
    .run(writeBootstrapScheduler),
  step('self-hosted-control-plane')
    .needs('wait-bootstrap-control-plane', 'bootstrap-scheduler')
    .title('self-hosted-control-plane: apply kube-apiserver, kube-controller-manager, kube-scheduler, one at a time, each roll awaited')
    .retry({ tries: 3, delayMs: 2_000 })
    .timeout(1_200_000)
    .run(applyRestoredControlPlane),
  step('wait-node-registered').needs('self-hosted-control-plane').title('wait-node-registered: the kubelet registered the Node').run(waitNodeRegistered),
  step('mark-control-plane').needs('wait-node-registered').title('mark-control-plane: label and taint the Node').run(markControlPlane),
  step('recovery-watcher')
    .needs('mark-control-plane')
    .title('recovery-watcher: the unit that restores the last-known-good kube-apiserver, started again')
    .run(ensureRecoveryWatcher),
  step('etcd-snapshot-schedule')
    .needs('etcd')
    .title('etcd-snapshot-schedule: the timer for `kubeception etcd snapshot save` (etcd.snapshots)')
    .run(ensureEtcdSnapshotSchedule),
  step('wait-self-hosted-control-plane')
    .needs('mark-control-plane')
    .title('wait-self-hosted-control-plane: self-hosted kube-apiserver ready 10 times in a row')
    .skipIf(nothingToHandOver)
    .run(waitSelfHostedControlPlane),
  step('apiserver-recovery')
    .needs('wait-self-hosted-control-plane', 'recovery-watcher')
    .title('apiserver-recovery: last-known-good kube-apiserver static pod and its watcher unit')
    .timeout(180_000)
    .run(ensureRecovery),
  step('kubelet-pivot').needs('apiserver-recovery').title('kubelet-pivot: point the kubelet at the self-hosted apiserver').run(pivotKubelet),
  step('remove-bootstrap-control-plane')
    .needs('kubelet-pivot')
    .title('remove-bootstrap-control-plane: no bootstrap static pods left; the kubernetes Service on the final port')
    .run(removeBootstrapControlPlane),
  step('restore-done').needs('remove-bootstrap-control-plane', 'etcd-snapshot-schedule').title('restore-done: the RTO').run(restoreDone),
]) satisfies Task<RestoreContext>;
