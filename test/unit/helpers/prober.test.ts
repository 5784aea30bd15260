import { test } from 'node:test';
import assert from 'node:assert/strict';
import { longestGap } from '../../helpers/prober.ts';

test('longestGap: the longest stretch from the first failed probe to the next 200, with its start and answers', () => {
  const g = longestGap([[0, 200], [100, 0], [200, 500], [300, 200], [400, 0], [500, 0], [600, 0], [900, 200], [1000, 200]]);
  assert.equal(g.gapMs, 500);
  assert.equal(g.failed, 5);
  assert.equal(g.total, 9);
  assert.equal(g.gapStart, new Date(400).toISOString());
  assert.equal(g.gapAnswers, '0×3');
});

test('longestGap: a gap still open at the end counts to the last probe; no failure, no gap', () => {
  assert.equal(longestGap([[0, 200], [100, 503], [700, 0]]).gapMs, 600);
  const none = longestGap([[0, 200], [100, 200]]);
  assert.equal(none.gapMs, 0);
  assert.equal(none.gapStart, undefined);
});

test('longestGap: the failed /readyz checks named by the answers in the longest gap only', () => {
  const g = longestGap([[0, 500, 'etcd'], [100, 200], [200, 500, 'etcd,informer-sync'], [300, 0], [400, 500, 'informer-sync'], [500, 403, ''], [600, 200]]);
  assert.equal(g.gapMs, 400);
  assert.equal(g.gapChecks, 'etcd×1 informer-sync×2');
  assert.equal(g.gapAnswers, '500×2 0×1 403×1');
  assert.equal(longestGap([[0, 200], [100, 0], [200, 200]]).gapChecks, undefined);
});
