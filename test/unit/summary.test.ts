/** The end-of-run summary and the JSON `result` event: what changed, elapsed time, next steps; no secrets. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration, renderSummary, resultEvent, type SummaryInput } from '../../lib/summary.ts';
import type { RunEvent } from '../../lib/engine/events.ts';
import type { ResolvedConfig } from '../../lib/types.ts';
import type { RunState } from '../../lib/run-options.ts';

const TOKEN = 'abcdef.0123456789abcdef';
const HASH = `sha256:${'a'.repeat(64)}`;
const config = {
  nodeName: 'cp1',
  localAPIEndpoint: { advertiseAddress: '10.250.0.10', bindPort: 6443 },
  bootstrapAPIEndpoint: { bindPort: 6444 },
  distro: { paths: { secretsDir: '/etc/kubernetes', kubeletConfigDir: '/var/lib/kubelet' } },
} as unknown as ResolvedConfig;
const events: RunEvent[] = [
  { event: 'step-done', step: 'preflight', durationMs: 5, changed: false },
  { event: 'step-done', step: 'certs', durationMs: 900, changed: true },
  { event: 'step-skipped', step: 'bootstrap-control-plane', reason: 'self-hosted apiserver serving' },
  { event: 'step-done', step: 'bootstrap-token', durationMs: 30, changed: true },
];
const joinCommand = `KUBECEPTION_TOKEN=${TOKEN} npx kubeception run join --url https://10.250.0.10:30000 --ca-cert-hash ${HASH}`;
const bootstrap = (tokenCreated: boolean): SummaryInput => ({
  task: 'bootstrap',
  status: 'done',
  durationMs: 65_400,
  events,
  config,
  state: { joinCommand, joinInfo: { url: 'https://10.250.0.10:30000', caCertHash: HASH, tokenId: 'abcdef', tokenCreated } } as RunState,
});

test('bootstrap summary: what changed, elapsed time, export KUBECONFIG, and the join command for a new token', () => {
  const text = renderSummary(bootstrap(true), { joinCommand });
  assert.match(text, /bootstrap done in 1m05s: 2 changed, 1 unchanged, 1 skipped\./);
  assert.match(text, /changed: certs, bootstrap-token/);
  assert.match(text, /running at https:\/\/10\.250\.0\.10:6443/);
  assert.match(text, /^ {2}export KUBECONFIG=\/etc\/kubernetes\/admin\.conf$/m);
  assert.match(text, new RegExp(`^ {2}${joinCommand.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`, 'm'));
  assert.match(text, /as root .*in the environment.*not a root process's environment/, 'says why the token is not a flag');
});

test('a converged re-run (token from an earlier run) never prints the secret; it says how to get a join command', () => {
  const text = renderSummary(bootstrap(false));
  assert.doesNotMatch(text, new RegExp(TOKEN.split('.')[1]!));
  assert.match(text, /Token abcdef from an earlier run is still valid/);
  assert.match(text, /kubeception token create --print-join-command/);
  assert.match(text, /export KUBECONFIG=/);
});

test('the result event carries endpoint, join URL, CA hash and token id — never the secret', () => {
  const r = resultEvent(bootstrap(true));
  assert.deepEqual(r, {
    event: 'result', task: 'bootstrap', status: 'done', durationMs: 65_400, changed: ['certs', 'bootstrap-token'], unchanged: ['preflight'], skipped: ['bootstrap-control-plane'],
    nodeName: 'cp1', endpoint: 'https://10.250.0.10:6443', adminKubeconfig: '/etc/kubernetes/admin.conf', joinUrl: 'https://10.250.0.10:30000', caCertHash: HASH, tokenId: 'abcdef', tokenCreated: true,
  });
  assert.doesNotMatch(JSON.stringify(r), /0123456789abcdef/);
});

test('join summary names the Node and what to check', () => {
  const text = renderSummary({ task: 'join', status: 'done', durationMs: 7_700, events, config, state: { join: { apiserver: 'https://10.250.0.10:6443', caPem: '' } } as RunState });
  assert.match(text, /join done in 7\.7s/);
  assert.match(text, /joined the cluster at https:\/\/10\.250\.0\.10:6443 as Node "cp1"/);
  assert.match(text, /kubectl get node cp1/);
  assert.match(text, /systemctl status kubelet/);
  assert.doesNotMatch(text, /KUBECONFIG/);
});

test('a failed run says where it stopped and what it had already changed', () => {
  const text = renderSummary({ ...bootstrap(false), status: 'failed', failedStep: 'etcd', durationMs: 3_000 });
  assert.match(text, /bootstrap failed at step etcd after 3\.0s/);
  assert.match(text, /already changed by this run: certs, bootstrap-token/);
  assert.match(text, /re-run `kubeception run bootstrap`/);
  assert.equal(formatDuration(125_000), '2m05s');
});
