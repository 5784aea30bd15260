import { test } from 'node:test';
import assert from 'node:assert/strict';
import { overrides, step as dslStep, task, type Task } from '../../lib/engine/dsl.ts';
import { applyEdits, order } from '../../lib/engine/graph.ts';
import { TaskDefinitionError } from '../../lib/errors.ts';

type Ctx = Record<string, never>;
const step = <const I extends string>(id: I) => dslStep<I, Ctx>(id);
const ids = (t: Task<Ctx>) => order(t).map((s) => s.id);

test('order: needs first, ties keep declaration order', () => {
  const t = task('t', [step('c').needs('a'), step('a'), step('b'), step('d').needs('c', 'b')]);
  assert.deepEqual(ids(t), ['a', 'c', 'b', 'd']);
});

test('order: a cycle names the steps on it', () => {
  const t = task('t', [step('a').needs('c'), step('b').needs('a'), step('c').needs('b'), step('x')]);
  assert.throws(() => order(t), (e: unknown) => {
    assert.ok(e instanceof TaskDefinitionError);
    assert.equal(e.code, 'task-cycle');
    assert.match(e.what, /a → c → b → a|c → b → a → c|b → a → c → b/);
    return true;
  });
});

test('order: an unknown need names the step and the missing id', () => {
  const t = task('t', [step('etcd').needs('certz')]);
  assert.throws(() => order(t), (e: any) => e.code === 'task-unknown-need' && /etcd/.test(e.what) && /certz/.test(e.what));
});

test('order: duplicate ids are an error', () => {
  const t = task('t', [step('a'), step('a')]);
  assert.throws(() => order(t), (e: any) => e.code === 'task-duplicate-step');
});

test('step builders are immutable', () => {
  const a = step('a');
  const b = a.needs('x').skipIf(() => 'r').timeout(5).retry({ tries: 2, delayMs: 1 });
  assert.deepEqual(a.spec.needs, []);
  assert.equal(a.spec.skipIf.length, 0);
  assert.deepEqual(b.spec.needs, ['x']);
  assert.ok(Object.isFrozen(b.spec));
  assert.throws(() => step('Bad_Id'), TypeError);
  assert.throws(() => a.retry({ tries: 0, delayMs: 1 }), TypeError);
});

const base = task('base', [step('pre'), step('mid').needs('pre'), step('post').needs('mid')]);

test('overrides: replace keeps position, remove rewires needs', () => {
  const o = overrides<typeof base>().replace('mid', step('mid').needs('pre').title('new mid')).remove('pre');
  const t = applyEdits(base, o.edits, 'test');
  assert.deepEqual(ids(t), ['mid', 'post']);
  assert.equal(t.steps[0]!.spec.title, 'new mid');
  assert.deepEqual(t.steps[0]!.spec.needs, []);
});

test('overrides: insertBefore / insertAfter place and wire the new step', () => {
  const o = overrides<typeof base>().insertBefore('mid', step('x').needs('pre')).insertAfter('mid', step('y'));
  const t = applyEdits(base, o.edits, 'test');
  assert.deepEqual(ids(t), ['pre', 'x', 'mid', 'y', 'post']);
  const spec = (id: string) => t.steps.find((s) => s.spec.id === id)!.spec;
  assert.deepEqual(spec('mid').needs, ['pre', 'x']);
  assert.deepEqual(spec('y').needs, ['mid']);
  assert.deepEqual(spec('post').needs, ['mid', 'y']);
});

test('overrides: an unknown id is a typed error naming it', () => {
  const o = overrides<typeof base>().remove('nope' as 'pre');
  assert.throws(() => applyEdits(base, o.edits, 'distros/x/overrides.ts'), (e: any) => e.code === 'task-override' && /nope/.test(e.what) && /distros\/x/.test(e.what));
});

test('overrides keep a task concurrent (a distro edit of the join task does not serialise it)', () => {
  const concurrent = task('c', [step('pre'), step('mid').needs('pre')], { concurrent: true });
  const edited = applyEdits(concurrent, overrides<typeof concurrent>().insertAfter('pre', step('x')).edits, 'test');
  assert.equal(edited.concurrent, true);
  assert.equal(applyEdits(base, overrides<typeof base>().remove('pre').edits, 'test').concurrent, undefined);
});
