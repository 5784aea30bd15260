/**
 * join: makes this host a worker of an existing cluster through the in-cluster join service:
 * `kubeception run join --url https://<any node>:30000 --token T --ca-cert-hash sha256:H` (token also from
 * --token-file FILE or KUBECEPTION_TOKEN).
 * Copy to ./tasks/join.ts on a site to customise; nothing runs at import time.
 */
import { step, task } from '../lib/dsl.ts';
import { runPreflight, workerChecks } from '../lib/steps/preflight.ts';
import { alreadyJoined, discover, joinFlagChecks, notControlPlaneCheck, waitKubeletBootstrap, writeWorkerKubelet } from '../lib/steps/join.ts';
import { startKubelet } from '../lib/steps/kubelet.ts';

export default task('join', [
  step('preflight')
    .title('preflight: host, kubelet, join flags')
    .run((ctx) => runPreflight(ctx, [...workerChecks(ctx), notControlPlaneCheck, ...joinFlagChecks])),
  step('discovery').needs('preflight').title('discovery: token-signed cluster-info, CA pin, node name free').skipIf(alreadyJoined).run(discover),
  step('kubelet-config').needs('discovery').title('kubelet-config: CA, bootstrap kubeconfig, config.yaml, drop-in').run(writeWorkerKubelet),
  step('kubelet-start').needs('kubelet-config').title('kubelet-start: enable and start the kubelet').run(startKubelet),
  step('wait-kubelet-bootstrap').needs('kubelet-start').title('wait-kubelet-bootstrap: client certificate via CSR').run(waitKubeletBootstrap),
]);
