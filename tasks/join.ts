/**
 * join: makes this host a node of an existing cluster through the in-cluster join service:
 * `KUBECEPTION_TOKEN=T kubeception run join --url https://<any node>:30000 --ca-cert-hash sha256:H` (token
 * also from --token-file FILE, or --token T with a warning) — a worker; with `--control-plane` and
 * `KUBECEPTION_CERTIFICATE_KEY=K` (the key `kubeception certs upload` printed) a further control-plane
 * node with a stacked etcd member.
 * Copy to ./tasks/join.ts on a site to customise; nothing runs at import time.
 *
 * worker:        preflight → discovery → kubelet-config ‖ kubelet-client-cert → kubelet-start → wait-kubelet-bootstrap →
 *                wait-kubelet-serving-cert ‖ wait-node-network   (‖: at the same time — the task is concurrent)
 * control plane: preflight → discovery → control-plane-certs → certs → kubeconfig → apiserver-config → etcd-join → kubelet-config ‖
 *                kubelet-client-cert → kubelet-start → wait-kubelet-bootstrap → wait-kubelet-serving-cert ‖ mark-control-plane → control-plane-spread →
 *                wait-local-apiserver → apiserver-recovery; etcd-join → etcd-snapshot-schedule
 */
import { step, task, type Task } from 'kubeception/dsl';
import {
  alreadyJoined,
  controlPlaneJoinChecks,
  discover,
  ensureEtcdSnapshotSchedule,
  ensureJoinedApiServerConfig,
  ensureJoinedKubeconfigs,
  ensureRecovery,
  fetchControlPlaneCerts,
  joinEtcd,
  joinFlagChecks,
  kubeletClientCert,
  markJoinedControlPlane,
  networkWaitNotRequested,
  noServingBootstrap,
  noCertsToFetch,
  NODE_NETWORK_TIMEOUT_MS,
  notControlPlaneCheck,
  notControlPlaneJoin,
  reconcileCerts,
  runPreflight,
  SERVING_CERT_TIMEOUT_MS,
  spreadControllers,
  startKubelet,
  waitKubeletBootstrap,
  waitKubeletServingCert,
  waitLocalApiserver,
  waitNodeNetwork,
  workerChecks,
  writeWorkerKubelet,
  type JoinContext,
} from 'kubeception/steps';

export default task('join', [
  step('preflight')
    .title('preflight: host, kubelet, join flags, distro of the node record (control plane: etcd, ports, certificate key)')
    .run((ctx: JoinContext) => runPreflight(ctx, ctx.options.controlPlane ? controlPlaneJoinChecks(ctx) : [...workerChecks(ctx), notControlPlaneCheck, ...joinFlagChecks])),
  step('discovery').needs('preflight').title('discovery: token-signed cluster-info, CA pin, node name free').skipIf(alreadyJoined).run(discover),
  step('control-plane-certs')
    .needs('discovery')
    .title('control-plane-certs: the uploaded shared keys, decrypted with the certificate key')
    .skipIf(noCertsToFetch)
    .run(fetchControlPlaneCerts),
  step('certs').needs('control-plane-certs').title('certs: this node\'s leaf certificates').skipIf(notControlPlaneJoin).run(reconcileCerts),
  step('kubeconfig').needs('certs').title('kubeconfig: admin (controlPlaneEndpoint), controller-manager, scheduler').skipIf(notControlPlaneJoin).run(ensureJoinedKubeconfigs),
  // The apiserver's hardening files; the encryption config came with the shared keys.
  step('apiserver-config').needs('certs').title('apiserver-config: audit policy, admission config; the cluster\'s encryption config').skipIf(notControlPlaneJoin).run(ensureJoinedApiServerConfig),
  step('etcd-join')
    .needs('kubeconfig', 'apiserver-config')
    .title('etcd-join: add this host as a learner, start etcd, promote it')
    .skipIf(notControlPlaneJoin)
    .timeout(240_000)
    .run(joinEtcd),
  step('kubelet-config').needs('discovery', 'etcd-join').title('kubelet-config: node record, CA, config.yaml, drop-in').run(writeWorkerKubelet),
  step('kubelet-client-cert')
    .needs('discovery', 'etcd-join')
    .title("kubelet-client-cert: the kubelet's client certificate by CSR (bootstrap token), before it starts")
    .skipIf(alreadyJoined)
    .timeout(260_000)
    .run(kubeletClientCert),
  step('kubelet-start').needs('kubelet-config', 'kubelet-client-cert').title('kubelet-start: enable and start the kubelet').run(startKubelet),
  step('wait-kubelet-bootstrap').needs('kubelet-start').title('wait-kubelet-bootstrap: the kubelet runs with its client certificate').run(waitKubeletBootstrap),
  step('wait-kubelet-serving-cert')
    .needs('wait-kubelet-bootstrap')
    .title("wait-kubelet-serving-cert: the kubelet serves with a certificate of the cluster CA (kubectl logs/exec work)")
    .skipIf(noServingBootstrap)
    .timeout(SERVING_CERT_TIMEOUT_MS + 10_000)
    .run(waitKubeletServingCert),
  step('mark-control-plane').needs('wait-kubelet-bootstrap').title('mark-control-plane: label and taint the Node').skipIf(notControlPlaneJoin).run(markJoinedControlPlane),
  step('control-plane-spread')
    .needs('mark-control-plane')
    .title('control-plane-spread: a controller-manager and a scheduler replica per control-plane node')
    .skipIf(notControlPlaneJoin)
    .run(spreadControllers),
  step('wait-local-apiserver')
    .needs('mark-control-plane')
    .title("wait-local-apiserver: this node's kube-apiserver ready 10 times in a row")
    .skipIf(notControlPlaneJoin)
    .timeout(330_000)
    .run(waitLocalApiserver),
  step('apiserver-recovery')
    .needs('wait-local-apiserver', 'control-plane-spread')
    .title('apiserver-recovery: last-known-good kube-apiserver static pod and its watcher unit')
    .skipIf(notControlPlaneJoin)
    .timeout(180_000)
    .run(ensureRecovery),
  // Every control-plane node snapshots its own member (etcd.snapshots), as k3s does.
  step('etcd-snapshot-schedule')
    .needs('etcd-join')
    .title('etcd-snapshot-schedule: the timer for `kubeception etcd snapshot save` (etcd.snapshots)')
    .skipIf(notControlPlaneJoin)
    .run(ensureEtcdSnapshotSchedule),
  step('wait-node-network')
    .needs('wait-kubelet-bootstrap')
    .title('wait-node-network: the pod network is up on this node (--wait-for-network)')
    .skipIf(networkWaitNotRequested)
    .timeout(NODE_NETWORK_TIMEOUT_MS + 30_000)
    .run(waitNodeNetwork),
  // Steps without a need between them run at once: the kubelet's files are written while its CSR
  // waits for approval. None of them writes another's files.
], { concurrent: true }) satisfies Task<JoinContext>;
