import { test } from 'node:test';
import assert from 'node:assert/strict';
import { step as dslStep, task, type Task } from '../../lib/engine/dsl.ts';
import { runTask } from '../../lib/engine/runner.ts';
import { KubeceptionError, RolledBackError } from '../../lib/errors.ts';
import type { RunEvent } from '../../lib/engine/events.ts';

type Ctx = { trace: string[] };
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const step = <const I extends string>(id: I) => dslStep<I, Ctx>(id);
const NO = { changed: false };

async function run(t: Task<Ctx>, opts: { concurrent?: boolean; only?: string[]; skip?: string[] } = {}) {
  const events: (RunEvent & { time: string })[] = [];
  const trace: string[] = [];
  const result = await runTask(t, () => ({ trace }), { renderer: 'silent', sink: (e) => events.push(e), ...opts });
  return { result, events, trace };
}

test('runs in dependency order and reports done with durationMs and changed', async () => {
  const t = task('t', [
    step('b').needs('a').run((c: Ctx) => { c.trace.push('b'); return { changed: false }; }),
    step('a').run((c: Ctx) => { c.trace.push('a'); return { changed: true, detail: 'made' }; }),
  ]);
  const { result, events, trace } = await run(t);
  assert.equal(result.status, 'done');
  assert.deepEqual(trace, ['a', 'b']);
  const done = events.filter((e) => e.event === 'step-done') as Extract<RunEvent, { event: 'step-done' }>[];
  assert.deepEqual(done.map((e) => [e.step, e.changed]), [['a', true], ['b', false]]);
  assert.ok(done.every((e) => typeof e.durationMs === 'number'));
});

test('skipIf reason is reported; dependents still run', async () => {
  const t = task('t', [
    step('a').skipIf(async () => 'already converged').run((c: Ctx) => { c.trace.push('a'); return NO; }),
    step('b').needs('a').skipIf(() => false).run((c: Ctx) => { c.trace.push('b'); return NO; }),
  ]);
  const { events, trace } = await run(t);
  assert.deepEqual(trace, ['b']);
  assert.deepEqual(events.find((e) => e.event === 'step-skipped'), { event: 'step-skipped', step: 'a', reason: 'already converged', time: (events.find((e) => e.event === 'step-skipped') as any).time });
});

test('a failure names the step and code; later steps do not run', async () => {
  const t = task('t', [
    step('a').run(() => { throw new KubeceptionError('boom', { what: 'x', why: 'y', fix: 'z' }); }),
    step('b').needs('a').run((c: Ctx) => { c.trace.push('b'); return NO; }),
    step('c').run((c: Ctx) => { c.trace.push('c'); return NO; }),
  ]);
  const { result, events, trace } = await run(t);
  assert.equal(result.status, 'failed');
  assert.equal(result.failedStep, 'a');
  assert.deepEqual(trace, []);
  const failed = events.find((e) => e.event === 'step-failed') as any;
  assert.equal(failed.code, 'boom');
  assert.deepEqual(events.filter((e) => e.event === 'step-skipped').map((e: any) => e.reason), ['not run: step a failed', 'not run: step a failed']);
});

test('retry: tries until success, with retry events', async () => {
  let n = 0;
  const t = task('t', [step('flaky').retry({ tries: 3, delayMs: 5, backoff: 2 }).run(() => { if (++n < 3) throw new Error(`attempt ${n}`); return NO; })]);
  const { result, events } = await run(t);
  assert.equal(result.status, 'done');
  assert.equal(n, 3);
  assert.equal(events.filter((e) => e.event === 'step-retry').length, 2);
});

test('retry: a change already rolled back is not tried again', async () => {
  let n = 0;
  const t = task('t', [step('roll').retry({ tries: 3, delayMs: 5 }).run(() => { n++; throw new RolledBackError('rolled-back', { what: 'DaemonSet/kube-system/kube-apiserver', why: 'its new pod keeps failing', fix: 'fix the flag' }); })]);
  const { result, events } = await run(t);
  assert.equal(result.status, 'failed');
  assert.equal(n, 1);
  assert.equal(events.filter((e) => e.event === 'step-retry').length, 0);
  assert.equal((events.find((e) => e.event === 'step-failed') as any).code, 'rolled-back');
});
test('timeout fails the step with step-timeout', async () => {
  const t = task('t', [step('slow').timeout(50).run(async () => { await sleep(2_000); return NO; })]);
  const t0 = Date.now();
  const { result, events } = await run(t);
  assert.ok(Date.now() - t0 < 1_500);
  assert.equal(result.status, 'failed');
  assert.equal((events.find((e) => e.event === 'step-failed') as any).code, 'step-timeout');
});

test('--only and --skip skip with a reason', async () => {
  const t = task('t', [step('a').run((c: Ctx) => { c.trace.push('a'); return NO; }), step('b').run((c: Ctx) => { c.trace.push('b'); return NO; }), step('c').run((c: Ctx) => { c.trace.push('c'); return NO; })]);
  const { trace, events } = await run(t, { only: ['a', 'b'], skip: ['b'] });
  assert.deepEqual(trace, ['a']);
  assert.deepEqual(events.filter((e) => e.event === 'step-skipped').map((e: any) => [e.step, e.reason]), [['b', 'skipped by --skip'], ['c', 'not selected by --only']]);
});

test('concurrent: independent steps overlap, dependents wait', async () => {
  const spans: Record<string, [number, number]> = {};
  const timed = (id: string) => async () => { const s = Date.now(); await sleep(150); spans[id] = [s, Date.now()]; return NO; };
  const t = task('t', [step('a').run(timed('a')), step('b').run(timed('b')), step('c').needs('a', 'b').run(timed('c'))]);
  const { result } = await run(t, { concurrent: true });
  assert.equal(result.status, 'done');
  assert.ok(spans.a![0] < spans.b![1] && spans.b![0] < spans.a![1], 'a and b overlap');
  assert.ok(spans.c![0] >= Math.max(spans.a![1], spans.b![1]), 'c starts after a and b');
});

test('a task declared concurrent (task(…, { concurrent: true })) overlaps its independent steps without --concurrent', async () => {
  const spans: Record<string, [number, number]> = {};
  const timed = (id: string) => async () => { const s = Date.now(); await sleep(150); spans[id] = [s, Date.now()]; return NO; };
  const steps = [step('a').run(timed('a')), step('b').run(timed('b')), step('c').needs('a', 'b').run(timed('c'))] as const;
  const { result } = await run(task('t', steps, { concurrent: true }));
  assert.equal(result.status, 'done');
  assert.ok(spans.a![0] < spans.b![1] && spans.b![0] < spans.a![1], 'a and b overlap');
  assert.ok(spans.c![0] >= Math.max(spans.a![1], spans.b![1]), 'c starts after a and b');
  await run(task('t', steps));
  assert.ok(spans.b![0] >= spans.a![1] || spans.a![0] >= spans.b![1], 'without the declaration, one step at a time');
});

test('a step that returns no outcome fails with step-outcome-missing (void is not "unchanged")', async () => {
  const t = task('t', [step('silent').run((() => undefined) as never)]);
  const { result, events } = await run(t);
  assert.equal(result.status, 'failed');
  const failed = events.find((e) => e.event === 'step-failed') as any;
  assert.equal(failed.code, 'step-outcome-missing');
  assert.match(failed.message, /silent/);
});

test('bad input after a step changed the host is a failed step (exit 1) saying what was done, not exit 2', async () => {
  const { HostStateError } = await import('../../lib/errors.ts');
  const late = task('t', [
    step('a').run(() => ({ changed: true, detail: 'wrote a.conf' })),
    step('b').needs('a').run(() => { throw new HostStateError('kubelet-missing', { what: 'kubelet', why: 'not on PATH', fix: 'install it' }); }),
  ]);
  const { result } = await run(late);
  assert.equal((result.error as KubeceptionError).badInput, false);
  assert.match((result.error as KubeceptionError).why, /already done: a \(wrote a\.conf\)/);
  const early = task('t', [step('a').run(() => { throw new HostStateError('x', { what: 'w', why: 'y', fix: 'z' }); })]);
  assert.equal(((await run(early)).result.error as KubeceptionError).badInput, true, 'before any change: still bad input');
});
