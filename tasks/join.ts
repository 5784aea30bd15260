/**
 * join: makes this host a worker of an existing cluster through the in-cluster join service:
 * `kubeception run join --url https://<any node>:30000 --token T --ca-cert-hash sha256:H` (token also from
 * --token-file FILE or KUBECEPTION_TOKEN).
 * Copy to ./tasks/join.ts on a site to customise; nothing runs at import time.
 */
import { step, task } from 'kubeception/dsl';
import {
  alreadyJoined,
  discover,
  joinFlagChecks,
  networkWaitNotRequested,
  NODE_NETWORK_TIMEOUT_MS,
  notControlPlaneCheck,
  runPreflight,
  startKubelet,
  waitKubeletBootstrap,
  waitNodeNetwork,
  workerChecks,
  writeWorkerKubelet,
} from 'kubeception/steps';

export default task('join', [
  step('preflight')
    .title('preflight: host, kubelet, join flags')
    .run((ctx) => runPreflight(ctx, [...workerChecks(ctx), notControlPlaneCheck, ...joinFlagChecks])),
  step('discovery').needs('preflight').title('discovery: token-signed cluster-info, CA pin, node name free').skipIf(alreadyJoined).run(discover),
  step('kubelet-config').needs('discovery').title('kubelet-config: CA, bootstrap kubeconfig, config.yaml, drop-in').run(writeWorkerKubelet),
  step('kubelet-start').needs('kubelet-config').title('kubelet-start: enable and start the kubelet').run(startKubelet),
  step('wait-kubelet-bootstrap').needs('kubelet-start').title('wait-kubelet-bootstrap: client certificate via CSR').run(waitKubeletBootstrap),
  step('wait-node-network')
    .needs('wait-kubelet-bootstrap')
    .title('wait-node-network: the pod network is up on this node (--wait-for-network)')
    .skipIf(networkWaitNotRequested)
    .timeout(NODE_NETWORK_TIMEOUT_MS + 30_000)
    .run(waitNodeNetwork),
]);
