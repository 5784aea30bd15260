/**
 * openSUSE Kubic overrides of the package's tasks. Kubic runs CRI-O, which is not started by
 * default: preflight also checks that its unit exists, and a `container-runtime` step starts it
 * before the kubelet.
 */
import { overrides, step } from 'kubeception/dsl';
import {
  containerRuntimeCheck,
  controlPlaneChecks,
  ensureContainerRuntime,
  pkiPreflightCheck,
  runPreflight,
} from 'kubeception/steps';
import type bootstrap from '../../tasks/bootstrap.ts';

export default {
  bootstrap: overrides<typeof bootstrap>()
    .replace(
      'preflight',
      step('preflight')
        .title('preflight (kubic): host, ports, binaries, CRI-O, etcd data dir, PKI')
        .run((ctx) => runPreflight(ctx, [...controlPlaneChecks(ctx), pkiPreflightCheck, containerRuntimeCheck])),
    )
    .insertBefore('kubelet-start', step('container-runtime').needs('preflight').title('container-runtime: start CRI-O').run(ensureContainerRuntime)),
};
