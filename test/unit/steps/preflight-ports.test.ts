/**
 * Port-* preflight checks against a real listening socket: a port held by our unit's main process
 * passes while the unit is still `activating` (a run killed during etcd's start, then re-run); a port
 * held by any other process fails whatever state the unit is in. systemd is a double (pure unit).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import process from 'node:process';
import { createServer } from 'node:net';
import { portCheck } from '../../../lib/steps/preflight/preflight.ts';

async function listening() {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port };
}

const ctx = (state: string, mainPid: number) =>
  ({ config: { distro: { units: { etcd: 'etcd.service', kubelet: 'kubelet.service' } } }, systemd: { activeState: async () => state, mainPid: async () => mainPid } }) as never;

test('Port check: a free port passes', async () => {
  const { server, port } = await listening();
  server.close();
  await new Promise((r) => server.once('close', r));
  assert.equal(await portCheck(port, 'etcd').run(ctx('inactive', 0)), undefined);
});

test('Port check: our unit activating, its main process holds the socket → ours', async () => {
  const { server, port } = await listening();
  try {
    assert.equal(await portCheck(port, 'etcd').run(ctx('activating', process.pid)), undefined);
    assert.equal(await portCheck(port, 'etcd').run(ctx('active', 0)), undefined);
  } finally {
    server.close();
  }
});

test('Port check: unit activating but another process holds the socket → refused, naming the state', async () => {
  const { server, port } = await listening();
  try {
    const failure = await portCheck(port, 'etcd').run(ctx('activating', 1));
    assert.match(failure?.message ?? '', new RegExp(`port ${port} is in use and etcd.service is activating, so another program holds it`));
    assert.ok(await portCheck(port, 'etcd').run(ctx('inactive', 0)));
  } finally {
    server.close();
  }
});
