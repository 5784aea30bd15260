/** listeningPorts/listeningSockets: parse the kernel's socket tables (an unreadable table is an error, never "all ports free"); processHoldsSocket reads a process's fds. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { listeningPorts, listeningSockets, processHoldsSocket } from '../../../lib/host/ports.ts';

const HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n';
const row = (port: number, st: string, inode = 1) => `   0: 0100007F:${port.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 ${st} 00000000:00000000 00:00000000 00000000     0        0 ${inode} 1 0 100 0 0 10 0\n`;

test('LISTEN rows count, other states do not; a missing tcp6 is no IPv6', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ports-'));
  await writeFile(join(dir, 'tcp'), HEADER + row(2379, '0A') + row(6443, '01'));
  assert.deepEqual([...(await listeningPorts([join(dir, 'tcp'), join(dir, 'tcp6')]))], [2379]);
});

test('an unreadable /proc/net/tcp throws proc-net-unreadable', async () => {
  await assert.rejects(listeningPorts(['/nonexistent/tcp']), (e: any) => e.code === 'proc-net-unreadable' && /\/nonexistent\/tcp/.test(e.what));
});

test('a file that is not a socket table throws instead of reading as empty', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ports-'));
  await writeFile(join(dir, 'tcp'), '');
  await assert.rejects(listeningPorts([join(dir, 'tcp')]), (e: any) => e.code === 'proc-net-unreadable');
});

test('the real /proc/net/tcp parses', async () => {
  assert.ok((await listeningPorts()) instanceof Set);
});

test('listeningSockets keeps each LISTEN row\'s inode, IPv4 and IPv6 together', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ports-'));
  await writeFile(join(dir, 'tcp'), HEADER + row(2379, '0A', 4711) + row(2379, '01', 99));
  await writeFile(join(dir, 'tcp6'), HEADER + row(2379, '0A', 4712));
  assert.deepEqual([...((await listeningSockets([join(dir, 'tcp'), join(dir, 'tcp6')])).get(2379) ?? [])], ['4711', '4712']);
});

test('processHoldsSocket: true for the process that listens, false for another process and for pid 0', async () => {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as { port: number }).port;
    const inodes = (await listeningSockets()).get(port);
    assert.ok(inodes?.size, `port ${port} listed with its inode`);
    assert.equal(await processHoldsSocket(process.pid, inodes), true);
    assert.equal(await processHoldsSocket(1, inodes), false);
    assert.equal(await processHoldsSocket(0, inodes), false);
  } finally {
    server.close();
  }
});
