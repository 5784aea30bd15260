/**
 * test/bed/demo.sh never touches a bed host it did not create: with a host named `demo` already there,
 * it boots `demo2` and sends no command (down, stop, exec, up) to `demo`. `npx` is replaced by a
 * recorder on PATH that logs every call and answers `host.ts list` with an existing `demo`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..', '..');

function runDemo(existing: string[]): string[] {
  const bin = mkdtempSync(join(tmpdir(), 'kc-demo-'));
  const log = join(bin, 'calls.log');
  const hosts = existing.map((n, i) => `${n}\\t10.250.0.${10 + i}\\t${n}\\trunning`).join('\\n');
  writeFileSync(join(bin, 'npx'), `#!/bin/sh\necho "$*" >> ${log}\ncase "$*" in\n  *" list") printf '${hosts}${hosts ? '\\n' : ''}' ;;\n  *kubectl*) echo "x Ready control-plane 1m v1.34.4" ;;\nesac\n`);
  chmodSync(join(bin, 'npx'), 0o755);
  const r = spawnSync('bash', [join(ROOT, 'test/bed/demo.sh')], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, KUBECEPTION_BED_READY: '1' }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return readFileSync(log, 'utf8').trim().split('\n');
}

test('an existing host named demo is left alone: demo.sh boots demo2 and talks only to it', () => {
  const calls = runDemo(['demo', 'u14other']);
  assert.ok(calls.some((c) => c.startsWith('tsx test/bed/host.ts up demo2 ')), calls.join('\n'));
  const touching = calls.filter((c) => / demo( |$)/.test(c));
  assert.deepEqual(touching, [], 'no command names the existing host');
  assert.ok(!calls.some((c) => /host\.ts (down|down-all|stop)\b/.test(c)), 'nothing is taken down');
});

test('with no demo host it boots demo', () => {
  const calls = runDemo([]);
  assert.ok(calls.some((c) => c.startsWith('tsx test/bed/host.ts up demo ')), calls.join('\n'));
  assert.ok(!calls.some((c) => /host\.ts (down|down-all|stop)\b/.test(c)));
});
