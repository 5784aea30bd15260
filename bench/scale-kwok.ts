/**
 * kwok (sigs.k8s.io/kwok, built by test/bed/build-kwok.sh) for the scale bench: it keeps the simulated
 * Nodes Ready the way kubelets would (status at registration, a Lease renewed every 10 s, a status
 * heartbeat every 10–20 min as a kubelet with leases) and plays the pods scheduled onto them (the
 * DaemonSets' pods become Running). Its stages are kwok's own, from the module's kustomize/stage
 * directories (node: fast initialize + heartbeat-with-lease, as `kwokctl` sets up; pod: fast).
 * It manages only Nodes annotated `kwok.x-k8s.io/node=fake` (bench/scale-node.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CACHE_DIR, type Host } from '../test/bed/bed.ts';
import { KWOK_ANNOTATION } from './scale-node.ts';

/** The version test/bed/build-kwok.sh builds by default. */
export const KWOK_VERSION = 'v0.8.0';
const DIR = join(CACHE_DIR, 'kwok', KWOK_VERSION);
const STAGES = ['node/fast/node-initialize', 'node/heartbeat-with-lease/node-heartbeat-with-lease', 'pod/fast/pod-ready', 'pod/fast/pod-complete', 'pod/fast/pod-delete'];
/** Pod addresses kwok hands out (the DaemonSets' pods are host-network and get the node's address instead). */
const POD_CIDR = '10.251.0.0/16';

/**
 * Starts kwok in `host` as the transient unit `kc-kwok`, talking to the apiserver with `kubeconfig`
 * (a path inside `host`), reporting `host`'s address as every simulated Node's.
 * Host effects: writes /root/kwok.yaml; starts kc-kwok.service (it stops with the host).
 * @throws if the unit is not active 2 s after it started (with its journal).
 */
export async function startKwok(host: Host, kubeconfig: string): Promise<void> {
  const stages = STAGES.map((s) => readFileSync(join(DIR, 'src', 'kustomize', 'stage', `${s}.yaml`), 'utf8').trim());
  await host.writeFile('/root/kwok.yaml', `${stages.join('\n---\n')}\n`);
  await host.execOk([
    'systemd-run', '--unit=kc-kwok', '--property=LimitNOFILE=65536', '--setenv=HOME=/root', join(DIR, 'bin', 'kwok'),
    '--kubeconfig', kubeconfig, '--config', '/root/kwok.yaml', '--manage-nodes-with-annotation-selector', `${KWOK_ANNOTATION}=fake`,
    '--node-ip', host.ip, '--cidr', POD_CIDR, '--node-lease-duration-seconds', '40',
  ]);
  await new Promise((r) => setTimeout(r, 2_000));
  const active = (await host.exec(['systemctl', 'is-active', 'kc-kwok'])).stdout.trim();
  if (active !== 'active') throw new Error(`kwok is ${active} in ${host.name}:\n${await host.journal('kc-kwok', 40)}`);
}
