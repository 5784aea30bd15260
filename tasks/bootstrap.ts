/**
 * bootstrap: turns this host into a self-hosted control plane (the bootkube pattern, kubeadm's
 * phase names). Copy this file to ./tasks/bootstrap.ts on a site and edit it: the CLI prefers the
 * working directory's copy. Steps only export data; nothing runs at import time.
 *
 * Sequence: preflight → certs → kubeconfig → etcd → kubelet-config → bootstrap-control-plane →
 * kubelet-start → wait-bootstrap-control-plane → self-hosted-control-plane → wait-node-registered →
 * mark-control-plane → wait-self-hosted-control-plane → kubelet-pivot → remove-bootstrap-control-plane.
 */
import { step, task } from '../lib/dsl.ts';
import { runPreflight } from '../lib/steps/preflight.ts';
import { pkiPreflightCheck, reconcileCerts } from '../lib/steps/certs.ts';
import { ensureKubeconfigs } from '../lib/steps/kubeconfig.ts';
import { ensureEtcd } from '../lib/steps/etcd.ts';
import { unavailable } from '../lib/steps/pending.ts';

export default task('bootstrap', [
  step('preflight')
    .title('preflight: host, ports, binaries, etcd data dir, PKI')
    .run((ctx) => runPreflight(ctx, [pkiPreflightCheck])),
  step('certs').needs('preflight').title('certs: reconcile the PKI').run(reconcileCerts),
  step('kubeconfig').needs('certs').title('kubeconfig: admin, controller-manager, scheduler, kubelet').run(ensureKubeconfigs),
  step('etcd').needs('certs').title('etcd: configure, start through systemd, wait healthy').timeout(120_000).run(ensureEtcd),
  step('kubelet-config')
    .needs('kubeconfig')
    .run(() => unavailable('kubelet-config', 'the kubelet configuration writer')),
  step('bootstrap-control-plane')
    .needs('etcd', 'kubeconfig')
    .run(() => unavailable('bootstrap-control-plane', 'the static pod manifests')),
  step('kubelet-start')
    .needs('kubelet-config', 'bootstrap-control-plane')
    .run(() => unavailable('kubelet-start', 'a kubelet unit and container runtime')),
  step('wait-bootstrap-control-plane')
    .needs('kubelet-start')
    .run(() => unavailable('wait-bootstrap-control-plane', 'a running bootstrap kube-apiserver')),
  step('self-hosted-control-plane')
    .needs('wait-bootstrap-control-plane')
    .run(() => unavailable('self-hosted-control-plane', 'the self-hosted manifests')),
  step('wait-node-registered')
    .needs('self-hosted-control-plane')
    .run(() => unavailable('wait-node-registered', 'a registered Node')),
  step('mark-control-plane')
    .needs('wait-node-registered')
    .run(() => unavailable('mark-control-plane', 'a registered Node')),
  step('wait-self-hosted-control-plane')
    .needs('mark-control-plane')
    .run(() => unavailable('wait-self-hosted-control-plane', 'the self-hosted kube-apiserver')),
  step('kubelet-pivot')
    .needs('wait-self-hosted-control-plane')
    .run(() => unavailable('kubelet-pivot', 'the self-hosted kube-apiserver')),
  step('remove-bootstrap-control-plane')
    .needs('kubelet-pivot')
    .run(() => unavailable('remove-bootstrap-control-plane', 'a completed pivot')),
]);
