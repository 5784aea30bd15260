/**
 * bootstrap: turns this host into a self-hosted control plane (the bootkube pattern, kubeadm's
 * phase names). Copy this file to ./tasks/bootstrap.ts on a site and edit it: the CLI prefers the
 * working directory's copy. Steps only export data; nothing runs at import time.
 *
 * preflight → certs → kubeconfig → kubelet-config → apiserver-config → bootstrap-control-plane → kubelet-start → etcd →
 * wait-bootstrap-control-plane → bootstrap-scheduler → self-hosted-control-plane → wait-node-registered →
 * mark-control-plane → upload-config → addon/kube-proxy → addon/coredns → bootstrap-token → join-service → recovery-watcher →
 * etcd-snapshot-schedule → wait-self-hosted-control-plane → addon/flannel → apiserver-recovery → wait-join-service → kubelet-pivot →
 * remove-bootstrap-control-plane → secrets-encryption
 */
import { step, task, type Task } from 'kubeception/dsl';
import {
  applyCoreDNS,
  applyFlannel,
  applyKubeProxy,
  applySelfHostedControlPlane,
  ensureApiServerConfig,
  uploadClusterConfig,
  controlPlaneChecks,
  disabledEarlier,
  ensureBootstrapToken,
  ensureEtcd,
  ensureEtcdSnapshotSchedule,
  ensureJoinService,
  ensureKubeconfigs,
  ensureKubeletConfig,
  ensureRecovery,
  ensureRecoveryWatcher,
  ensureSecretsEncrypted,
  markControlPlane,
  networkChecks,
  noPodNetwork,
  nothingToHandOver,
  pivotKubelet,
  pkiPreflightCheck,
  reconcileCerts,
  removeBootstrapControlPlane,
  runPreflight,
  selfHostedServing,
  startKubelet,
  waitBootstrapControlPlane,
  waitJoinService,
  waitNodeRegistered,
  waitSelfHostedControlPlane,
  writeBootstrapControlPlane,
  writeBootstrapScheduler,
  type BootstrapContext,
} from 'kubeception/steps';

export default task('bootstrap', [
  step('preflight').title('preflight: host, ports, binaries, etcd data dir, PKI, DNS and pod network').run((ctx) => runPreflight(ctx, [...controlPlaneChecks(ctx), pkiPreflightCheck, ...networkChecks])),
  step('certs').needs('preflight').title('certs: reconcile the PKI').run(reconcileCerts),
  step('kubeconfig').needs('certs').title('kubeconfig: admin, controller-manager, scheduler, kubelet').run(ensureKubeconfigs),
  step('kubelet-config').needs('kubeconfig').title('kubelet-config: config.yaml, unit drop-in, kubeconfig target').run(ensureKubeletConfig),
  // The audit policy, the Pod Security admission config and the encryption key (CIS defaults), which
  // both apiservers read.
  step('apiserver-config').needs('certs').title('apiserver-config: audit policy, admission config, encryption config').run(ensureApiServerConfig),
  step('bootstrap-control-plane')
    .needs('certs', 'kubeconfig', 'apiserver-config')
    .title('bootstrap-control-plane: static pods for the temporary kube-apiserver and kube-controller-manager')
    .skipIf(selfHostedServing)
    .run(writeBootstrapControlPlane),
  step('kubelet-start').needs('kubelet-config', 'bootstrap-control-plane').title('kubelet-start: enable and start the kubelet').run(startKubelet),
  // etcd starts while the kubelet creates the bootstrap apiserver's container (≈ 1.5 s), which
  // connects to it once it runs.
  step('etcd').needs('certs').title('etcd: configure, start through systemd, wait healthy').timeout(120_000).run(ensureEtcd),
  step('wait-bootstrap-control-plane')
    .needs('kubelet-start', 'etcd')
    .title('wait-bootstrap-control-plane: bootstrap kube-apiserver ready')
    .skipIf(selfHostedServing)
    .run(waitBootstrapControlPlane),
  // The scheduler starts once the bootstrap apiserver is ready: started beside it, its informers'
  // first lists are refused (no RBAC roles yet) and back off for seconds before it takes its lease.
  step('bootstrap-scheduler')
    .needs('wait-bootstrap-control-plane')
    .title('bootstrap-scheduler: static pod for the temporary kube-scheduler, once the bootstrap apiserver is ready')
    .skipIf(selfHostedServing)
    .run(writeBootstrapScheduler),
  step('self-hosted-control-plane')
    .needs('wait-bootstrap-control-plane', 'bootstrap-scheduler', 'apiserver-config')
    .title('self-hosted-control-plane: apply kube-apiserver, kube-controller-manager, kube-scheduler')
    .retry({ tries: 3, delayMs: 2_000 })
    .run(applySelfHostedControlPlane),
  step('wait-node-registered').needs('self-hosted-control-plane').title('wait-node-registered: the kubelet registered the Node').run(waitNodeRegistered),
  step('mark-control-plane').needs('wait-node-registered').title('mark-control-plane: label and taint the Node').run(markControlPlane),
  // The fields a running cluster cannot change, which preflight's ClusterConfiguration check compares.
  step('upload-config').needs('mark-control-plane').title('upload-config: podSubnet, serviceSubnet, dnsDomain in ConfigMap kube-system/kubeception-config').run(uploadClusterConfig),
  // kube-proxy, CoreDNS and the join service go in through the bootstrap apiserver while the
  // self-hosted one starts (both store in the same etcd), and while the bootstrap controllers still
  // lead: their pods are created and scheduled at once, alongside the self-hosted apiserver's,
  // instead of after its stability check, or after the self-hosted controller-manager has waited
  // out the bootstrap one's lease (≈ 8 s after the hand-off). flannel comes after the check: its
  // flanneld exits when the kubernetes Service (the self-hosted apiserver) does not answer, and the
  // DaemonSet's restart back-off (10 s, 20 s) would then hold up every pod on the pod network.
  step('addon/kube-proxy').needs('mark-control-plane').title('addon/kube-proxy: the kube-proxy DaemonSet').skipIf(disabledEarlier('kube-proxy')).run(applyKubeProxy),
  step('addon/coredns').needs('addon/kube-proxy').title('addon/coredns: CoreDNS and the kube-dns Service').skipIf(disabledEarlier('coredns')).run(applyCoreDNS),
  step('bootstrap-token')
    .needs('addon/coredns')
    .title('bootstrap-token: TLS-bootstrap RBAC and a token for joining workers')
    .skipIf(noPodNetwork)
    .run(ensureBootstrapToken),
  step('join-service').needs('bootstrap-token').title('join-service: kubeception in kube-system on NodePort 30000').skipIf(noPodNetwork).run(ensureJoinService),
  // The watcher unit idles until the last-known-good copy exists: installed while the self-hosted
  // apiserver starts, its daemon-reload and start watch are off the path to the pivot.
  step('recovery-watcher')
    .needs('mark-control-plane')
    .title('recovery-watcher: the unit that restores the last-known-good kube-apiserver (idle until the copy exists)')
    .run(ensureRecoveryWatcher),
  // Scheduled etcd snapshots (k3s's every 12 h, keep 5 by default), off the path to the pivot like the watcher.
  step('etcd-snapshot-schedule')
    .needs('etcd')
    .title('etcd-snapshot-schedule: the timer for `kubeception etcd snapshot save` (etcd.snapshots)')
    .run(ensureEtcdSnapshotSchedule),
  step('wait-self-hosted-control-plane')
    .needs('mark-control-plane')
    .title('wait-self-hosted-control-plane: self-hosted kube-apiserver ready 10 times in a row')
    .skipIf(nothingToHandOver)
    .run(waitSelfHostedControlPlane),
  step('addon/flannel').needs('wait-self-hosted-control-plane', 'addon/kube-proxy').title('addon/flannel: the pod network (flannel DaemonSet)').skipIf(disabledEarlier('flannel')).run(applyFlannel),
  // The last-known-good copy and its watcher are in place before the kubelet leaves the bootstrap
  // apiserver (the watcher idles while bootstrap manifests exist), and the self-hosted pod is Ready
  // now; after the kubelet restart its Ready condition is re-established, which takes seconds.
  step('apiserver-recovery')
    .needs('wait-self-hosted-control-plane', 'recovery-watcher')
    .title('apiserver-recovery: last-known-good kube-apiserver static pod and its watcher unit')
    .timeout(180_000)
    .run(ensureRecovery),
  step('wait-join-service')
    .needs('join-service', 'addon/flannel', 'apiserver-recovery')
    .title('wait-join-service: the join service and CSR approver available')
    .skipIf(noPodNetwork)
    .run(waitJoinService),
  step('kubelet-pivot').needs('wait-join-service', 'apiserver-recovery').title('kubelet-pivot: point the kubelet at the self-hosted apiserver').run(pivotKubelet),
  step('remove-bootstrap-control-plane')
    .needs('kubelet-pivot')
    .title('remove-bootstrap-control-plane: no bootstrap static pods left; the kubernetes Service on the final port')
    .run(removeBootstrapControlPlane),
  // Once only the self-hosted apiservers run (with the current encryption config): Secrets written
  // before, or with an older key, are written again with the current one.
  step('secrets-encryption')
    .needs('remove-bootstrap-control-plane')
    .title('secrets-encryption: every Secret stored with the encryption config\'s current key')
    .run(ensureSecretsEncrypted),
]) satisfies Task<BootstrapContext>;
