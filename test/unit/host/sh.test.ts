/**
 * The real command wrapper (lib/host/sh.ts): a child sees this process's environment, except the join
 * secrets KUBECEPTION_TOKEN and KUBECEPTION_CERTIFICATE_KEY (issue 24) — read from the child's own
 * /proc/self/environ.
 */
import assert from 'node:assert/strict';
import process from 'node:process';
import { test } from 'node:test';
import { RealShell } from '../../../lib/host/sh.ts';

const TOKEN = 'abcdef.0123456789abcdef';
const KEY = 'c'.repeat(64);

test('a child started through the sh wrapper inherits the environment but not the join secrets', async () => {
  const saved = { ...process.env };
  Object.assign(process.env, { KUBECEPTION_TOKEN: TOKEN, KUBECEPTION_CERTIFICATE_KEY: KEY, KUBECEPTION_TEST_CANARY: 'inherited' });
  try {
    for (const run of ['read', 'exec'] as const) {
      const r = await new RealShell()[run](['cat', '/proc/self/environ'], { env: { KUBECEPTION_TEST_EXTRA: 'given' } });
      const env = r.stdout.split('\0').filter(Boolean);
      assert.ok(env.includes('KUBECEPTION_TEST_CANARY=inherited'), `${run}: the environment is inherited`);
      assert.ok(env.includes('KUBECEPTION_TEST_EXTRA=given'), `${run}: extra variables are passed`);
      assert.deepEqual(env.filter((e) => e.startsWith('KUBECEPTION_TOKEN=') || e.startsWith('KUBECEPTION_CERTIFICATE_KEY=')), [], `${run}: a join secret reached the child`);
      assert.ok(!r.stdout.includes(TOKEN.slice(7)) && !r.stdout.includes(KEY), `${run}: secret bytes in the child's environment`);
    }
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
  }
});
