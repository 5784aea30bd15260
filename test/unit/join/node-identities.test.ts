/** The node identity record (pure): what a bootstrap token may buy, what a control-plane join may hold. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { controlPlaneClaim, parseIdentities, pruned, renderIdentities, RETAIN_MS, tokenClaim, type Identities } from '../../../lib/join/node-identities.ts';

const now = Date.parse('2026-12-03T10:00:00Z');
const empty = (): Identities => parseIdentities(undefined);
/** Runs claims in order, carrying the record along; returns each outcome as a short string. */
function run(steps: { token: string; name: string; nodeExists?: boolean }[], start = empty()): { outcomes: string[]; ids: Identities } {
  let ids = start;
  const outcomes = steps.map((s, i) => {
    const c = tokenClaim(ids, { token: s.token, name: s.name, nodeExists: s.nodeExists ?? false, csr: `csr-${i}`, now: now + i });
    if ('refused' in c) return c.refused.reason;
    const same = c.next === ids;
    ids = c.next;
    return same ? 'approve (no write)' : 'approve';
  });
  return { outcomes, ids };
}

describe('node identities: tokenClaim', () => {
  test('one token buys one new name; a second name with the same token is refused', () => {
    assert.deepEqual(run([{ token: 'aaaaaa', name: 'w1' }, { token: 'aaaaaa', name: 'w2' }, { token: 'aaaaaa', name: 'cp2' }]).outcomes, ['approve', 'KubeceptionTokenUsed', 'KubeceptionTokenUsed']);
  });

  test('the same token and name again before the Node registers (a retried join) is approved without a new record; after it registered, refused', () => {
    assert.deepEqual(run([{ token: 'aaaaaa', name: 'w1' }, { token: 'aaaaaa', name: 'w1' }, { token: 'aaaaaa', name: 'w1', nodeExists: true }]).outcomes, ['approve', 'approve (no write)', 'KubeceptionNodeNameTaken']);
  });

  test('an existing Node (Ready or not) is never sold; once its Node is deleted, a new token may buy the name again', () => {
    const r = run([{ token: 'aaaaaa', name: 'w1' }, { token: 'bbbbbb', name: 'w1', nodeExists: true }, { token: 'bbbbbb', name: 'w1' }]);
    assert.deepEqual(r.outcomes, ['approve', 'KubeceptionNodeNameTaken', 'approve']);
    assert.equal(r.ids.nodes.get('w1')?.token, 'bbbbbb');
    assert.equal(r.ids.tokens.get('aaaaaa')?.node, 'w1', 'the first token stays used');
    assert.deepEqual(run([{ token: 'aaaaaa', name: 'x' }], r.ids).outcomes, ['KubeceptionTokenUsed'], 'and cannot buy anything else');
  });

  test('a name held by a control-plane node is refused to every token, with or without its Node', () => {
    const held = controlPlaneClaim(empty(), ['cp2'], now);
    assert.ok('next' in held);
    assert.deepEqual(run([{ token: 'aaaaaa', name: 'cp2' }, { token: 'bbbbbb', name: 'cp2', nodeExists: true }], held.next).outcomes, ['KubeceptionNameReserved', 'KubeceptionNameReserved']);
  });

  test('a refused claim leaves the token unused', () => {
    const held = controlPlaneClaim(empty(), ['cp2'], now);
    assert.ok('next' in held);
    assert.deepEqual(run([{ token: 'aaaaaa', name: 'cp2' }, { token: 'aaaaaa', name: 'w1' }], held.next).outcomes, ['KubeceptionNameReserved', 'approve']);
  });
});

describe('node identities: controlPlaneClaim', () => {
  test('refuses a name a token bought (naming the token), holds new names, and is idempotent', () => {
    const bought = run([{ token: 'aaaaaa', name: 'cp3' }]).ids;
    const r = controlPlaneClaim(bought, ['cp3'], now);
    assert.ok('issued' in r);
    assert.equal(r.issued.token, 'aaaaaa');
    const first = controlPlaneClaim(bought, ['cp1', 'cp2'], now);
    assert.ok('next' in first);
    assert.equal(first.next.nodes.get('cp2')?.via, 'control-plane');
    const again = controlPlaneClaim(first.next, ['cp2'], now + 5);
    assert.ok('next' in again && again.next === first.next, 'no write when every name is held already');
  });
});

describe('node identities: the ConfigMap data', () => {
  test('render → parse round-trips; malformed or foreign entries are dropped', () => {
    const { ids } = run([{ token: 'aaaaaa', name: 'w1.example' }]);
    const cp = controlPlaneClaim(ids, ['cp1'], now);
    assert.ok('next' in cp);
    const data = renderIdentities(cp.next);
    assert.deepEqual(renderIdentities(parseIdentities(data)), data);
    const junk = parseIdentities({ ...data, 'node.UPPER': data['node.cp1']!, 'node.x': '{"via":"root"}', 'token.short': '{"node":"w1","at":"2026-12-01T00:00:00Z"}', 'token.bbbbbb': 'w1', other: '1' });
    assert.deepEqual(renderIdentities(junk), data);
  });

  test('entries a token made are pruned after RETAIN_MS; control-plane names are kept', () => {
    const { ids } = run([{ token: 'aaaaaa', name: 'w1' }]);
    const cp = controlPlaneClaim(ids, ['cp1'], now);
    assert.ok('next' in cp);
    const later = pruned(cp.next, now + RETAIN_MS + 1);
    assert.deepEqual([...later.nodes.keys()], ['cp1']);
    assert.equal(later.tokens.size, 0);
    assert.equal(pruned(cp.next, now + RETAIN_MS - 10).tokens.size, 1);
  });
});
