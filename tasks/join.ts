/**
 * join: makes this host a worker of an existing cluster through the in-cluster join service
 * (`kubeception run join --url URL --token T --ca-cert-hash sha256:H`).
 */
import { step, task } from '../lib/dsl.ts';
import { unavailable } from '../lib/steps/pending.ts';

export default task('join', [
  step('discovery')
    .title('discovery: fetch and pin the cluster CA')
    .run(() => unavailable('discovery', 'the in-cluster join service')),
  step('kubelet-start').needs('discovery').run(() => unavailable('kubelet-start', 'TLS bootstrapping')),
]);
