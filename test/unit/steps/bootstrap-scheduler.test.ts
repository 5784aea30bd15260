/**
 * bootstrapSchedulerFallback: a site task file copied before the `bootstrap-scheduler` step existed
 * must still get a bootstrap scheduler (else nothing binds the self-hosted pods). Pure unit: an
 * in-memory file system.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { join } from 'node:path';
import { bootstrapSchedulerFallback } from '../../../lib/steps/bootstrap/control-plane.ts';
import type { Context } from '../../../lib/context.ts';
import { sampleConfig } from '../pki/fixtures.ts';

function fakeCtx(initial: string[]) {
  const config = sampleConfig();
  const dir = config.distro.paths.staticPodPath;
  const files = new Map<string, string>(initial.map((f) => [join(dir, f), 'apiVersion: v1\n']));
  const warnings: string[] = [];
  const ctx = {
    config,
    dryRun: false,
    log: { info: () => {}, warn: (m: string) => warnings.push(m) },
    files: {
      dryRun: false,
      read: async (p: string) => files.get(p),
      exists: async (p: string) => files.has(p),
      list: async (d: string) => [...files.keys()].filter((p) => p.startsWith(`${d}/`)).map((p) => p.slice(d.length + 1)),
      write: async (p: string, data: string | Uint8Array) => {
        const text = typeof data === 'string' ? data : Buffer.from(data).toString();
        if (files.get(p) === text) return false;
        files.set(p, text);
        return true;
      },
      mkdir: async () => false,
      remove: async (p: string) => files.delete(p),
    },
  } as unknown as Context;
  return { ctx, files, warnings, dir };
}

test('a bootstrap control plane without its scheduler (an old site task file): the scheduler is written, with a warning', async () => {
  const { ctx, files, warnings, dir } = fakeCtx(['bootstrap-kube-apiserver.yaml', 'bootstrap-kube-controller-manager.yaml']);
  assert.equal(await bootstrapSchedulerFallback(ctx), true);
  assert.match(files.get(join(dir, 'bootstrap-kube-scheduler.yaml')) ?? '', /kube-scheduler/);
  assert.match(warnings.join('\n'), /no bootstrap-scheduler step/);
});

test('the scheduler already written (the current task file), or no bootstrap control plane: nothing is written', async () => {
  const current = fakeCtx(['bootstrap-kube-apiserver.yaml', 'bootstrap-kube-controller-manager.yaml', 'bootstrap-kube-scheduler.yaml']);
  assert.equal(await bootstrapSchedulerFallback(current.ctx), false);
  assert.equal(current.files.get(join(current.dir, 'bootstrap-kube-scheduler.yaml')), 'apiVersion: v1\n');
  const selfHosted = fakeCtx([]);
  assert.equal(await bootstrapSchedulerFallback(selfHosted.ctx), false);
  assert.equal(selfHosted.files.size, 0);
  assert.deepEqual([...current.warnings, ...selfHosted.warnings], []);
});
