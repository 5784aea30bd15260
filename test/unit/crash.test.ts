/**
 * Fault injection (lib/engine/crash.ts): a child process running a task under KUBECEPTION_CRASH_AT really
 * dies of SIGKILL at the named point — before, inside or after a step — and nowhere else.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { crashPoints, MID_POINTS } from '../../lib/engine/crash.ts';
import bootstrap from '../../tasks/bootstrap.ts';
import join from '../../tasks/join.ts';
import type { Task } from '../../lib/engine/dsl.ts';
import type { RunContext } from '../../lib/run-options.ts';

const LIB = fileURLToPath(new URL('../../lib/engine/', import.meta.url));
const CHILD = `
const { step, task } = await import('${LIB}dsl.ts');
const { runTask } = await import('${LIB}runner.ts');
const { crashPoint } = await import('${LIB}crash.ts');
const { MID_POINTS } = await import('${LIB}crash.ts');
MID_POINTS.t = { b: ['half'] };
const t = task('t', [
  step('a').run(() => { console.log('ran a'); return { changed: true }; }),
  step('b').needs('a').run(() => { console.log('b first half'); crashPoint('half'); console.log('b second half'); return { changed: true }; }),
  step('c').needs('b').skipIf(() => 'skipped for the test').run(() => ({ changed: true })),
  step('d').needs('c').run(() => { console.log('ran d'); return { changed: true }; }),
]);
const r = await runTask(t, () => ({}), { renderer: 'silent' });
console.log('finished', r.status);
`;

function child(at?: string) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], { env: { ...process.env, KUBECEPTION_CRASH_AT: at ?? '' }, encoding: 'utf8', timeout: 60_000 });
  return { signal: r.signal, status: r.status, out: r.stdout.trim().split('\n'), err: r.stderr };
}

test('unset: the task runs to the end', () => {
  const r = child();
  assert.equal(r.signal, null);
  assert.deepEqual(r.out, ['ran a', 'b first half', 'b second half', 'ran d', 'finished done']);
});

test('a boundary point kills the process with SIGKILL before the step body', () => {
  const r = child('b:before');
  assert.equal(r.signal, 'SIGKILL');
  assert.deepEqual(r.out, ['ran a']);
  assert.match(r.err, /crash point b:before: SIGKILL/);
});

test('a mid-step point kills it inside the step', () => {
  const r = child('b:half');
  assert.equal(r.signal, 'SIGKILL');
  assert.deepEqual(r.out, ['ran a', 'b first half']);
});

test('a point of a skipped step kills at the next point reached', () => {
  const r = child('c:before');
  assert.equal(r.signal, 'SIGKILL');
  assert.match(r.err, /crash point d:before/);
  assert.deepEqual(r.out, ['ran a', 'b first half', 'b second half']);
});

test('bootstrap and join: every step has a before and after point; mid points belong to real steps', () => {
  for (const t of [bootstrap, join] as Task<RunContext>[]) {
    const points = crashPoints(t);
    const ids: string[] = t.steps.map((s) => s.spec.id);
    for (const id of ids) assert.ok(points.includes(`${id}:before`) && points.includes(`${id}:after`), id);
    for (const s of Object.keys(MID_POINTS[t.name] ?? {})) assert.ok(ids.includes(s), `${t.name}: MID_POINTS names unknown step ${s}`);
    assert.equal(new Set(points).size, points.length);
  }
  assert.ok(crashPoints(bootstrap).length >= 2 * bootstrap.steps.length + 8);
});

// A concurrent task: b runs beside a and reaches its points while a is still before its mid point.
const CONCURRENT_CHILD = `
const { step, task } = await import('${LIB}dsl.ts');
const { runTask } = await import('${LIB}runner.ts');
const { crashPoint, MID_POINTS } = await import('${LIB}crash.ts');
MID_POINTS.t = { a: ['half'] };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const t = task('t', [
  step('a').run(async () => { await sleep(300); console.log('a first half'); crashPoint('half'); return { changed: true }; }),
  step('b').run(() => { console.log('ran b'); return { changed: true }; }),
  step('c').needs('a', 'b').run(() => { console.log('ran c'); return { changed: true }; }),
], { concurrent: true });
const r = await runTask(t, () => ({}), { renderer: 'silent' });
console.log('finished', r.status);
`;

test('a concurrent task: a step running beside the named one does not stand in for its point', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CONCURRENT_CHILD], { env: { ...process.env, KUBECEPTION_CRASH_AT: 'a:half' }, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.signal, 'SIGKILL');
  assert.match(r.stderr, /crash point a:half: SIGKILL/);
  assert.deepEqual(r.stdout.trim().split('\n'), ['ran b', 'a first half']);
});
