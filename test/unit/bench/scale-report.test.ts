import { test } from 'node:test';
import assert from 'node:assert/strict';
import { figures, quantile, type SideResult } from '../../../bench/scale-report.ts';

test('quantile: nearest rank', () => {
  const xs = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1, unsorted on purpose
  for (const [p, want] of [[0.5, 50], [0.99, 99], [1, 100], [0, 1]] as const) assert.equal(quantile(xs, p), want, `p=${p}`);
  assert.equal(quantile([7], 0.99), 7);
  assert.ok(Number.isNaN(quantile([], 0.5)));
});

test('figures: throughput counts Ready nodes only; latencies skip failed joins and unseen CSRs', () => {
  const node = (name: string, extra: object) => ({ name, burst: 0, startAt: 0, discoveredMs: 10, postedMs: 20, certifiedMs: 1_020, registeredMs: 1_030, csrName: `csr-${name}`, ...extra });
  const rss = { apiserverMiB: 1, etcdMiB: 1, apiservers: 1, etcds: 1 };
  const r: SideResult = {
    side: 'kubeception',
    sim: {
      side: 'kubeception', wallMs: 4_000, timedOut: false, bursts: [],
      nodes: [
        node('a', { readyAt: 2_000, csrCreatedAt: 100, csrApprovedAt: 600, approvedBy: 'KubeceptionAutoApproved' }),
        node('b', { readyAt: 4_000, csrCreatedAt: 100, csrApprovedAt: 2_100, approvedBy: 'KubeceptionAutoApproved' }),
        node('c', { error: 'denied' }),
      ],
    },
    rss: { before: rss, after: rss },
    status: { before: undefined, after: undefined },
    plan: { before: undefined, after: undefined },
  };
  const f = figures(r);
  assert.equal(f.ready, 2);
  assert.equal(f.failed, 1);
  assert.equal(f.nodesPerS, 0.5);
  assert.equal(f.joinReadyP50, 2);
  assert.equal(f.joinReadyP99, 4);
  assert.equal(f.approveP50, 0.5);
  assert.equal(f.approveP99, 2);
  assert.equal(f.approvers, 'KubeceptionAutoApproved ×2');
  assert.equal(f.queuedGapMsP50, 1_500); // b was created (100) before a's approval (600): one decision's gap
  assert.equal(f.firstError, 'denied');
});

test('bench/scale-kwok.ts names the kwok version test/bed/build-kwok.sh builds', async () => {
  const { readFile } = await import('node:fs/promises');
  const script = await readFile(new URL('../../../test/bed/build-kwok.sh', import.meta.url), 'utf8');
  const bench = await readFile(new URL('../../../bench/scale-kwok.ts', import.meta.url), 'utf8');
  const built = /KWOK_VERSION="\$\{KWOK_VERSION:-(v[0-9.]+)\}"/.exec(script)?.[1];
  assert.ok(built);
  assert.equal(/export const KWOK_VERSION = '(v[0-9.]+)'/.exec(bench)?.[1], built);
});
