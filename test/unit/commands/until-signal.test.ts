/** untilSignal keeps a daemon alive with nothing else to do, and ends on SIGTERM (a real child process). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const commands = join(import.meta.dirname, '..', '..', '..', 'lib', 'commands', 'in-cluster.ts');

test('a process awaiting untilSignal with no timer or socket stays up, then exits 0 on SIGTERM', async () => {
  const script = `import { untilSignal } from ${JSON.stringify(commands)}; const p = untilSignal(); console.log('waiting'); await p; console.log('signalled');`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  // The 3 s start once the child waits (loading it through tsx takes seconds on a busy machine).
  await Promise.race([
    exited,
    new Promise<void>((resolve) => {
      const check = () => (out.includes('waiting') ? resolve() : setTimeout(check, 50));
      check();
    }),
  ]);
  const early = await Promise.race([exited.then((c) => `exited ${c}`), new Promise((r) => setTimeout(() => r('alive'), 3_000))]);
  assert.equal(early, 'alive', 'the process must not exit by itself');
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.match(out, /signalled/);
});
