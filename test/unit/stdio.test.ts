/**
 * stdout closing early (`| head`) never aborts a run: a child writes 2000 lines through guardStdout()
 * into a pipe whose reader stops after one line, then finishes its "run" and reports on stderr.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const stdio = fileURLToPath(new URL('../../lib/stdio.ts', import.meta.url));
const child = (guarded: boolean) => `
  import { guardStdout } from '${stdio}';
  const out = ${guarded} ? guardStdout() : { closed: 'unguarded' };
  const write = ${guarded} ? (s) => out.write(s) : (s) => process.stdout.write(s);
  for (let i = 0; i < 2000; i++) { write('{"event":"log","n":' + i + '}\\n'); await new Promise((r) => setTimeout(r, 1)); }
  process.stderr.write('run finished; stdout closed: ' + out.closed + '\\n');`;

function throughHead(guarded: boolean) {
  const script = `node --import tsx --input-type=module -e "$1" | head -n 1 >/dev/null; echo "exit=\${PIPESTATUS[0]}" >&2`;
  return spawnSync('bash', ['-c', script, 'sh', child(guarded)], { encoding: 'utf8', cwd: fileURLToPath(new URL('../..', import.meta.url)) });
}

test('with the guard the writer keeps going after EPIPE and finishes', () => {
  const r = throughHead(true);
  assert.match(r.stderr, /run finished; stdout closed: true/);
  assert.match(r.stderr, /exit=0/);
});

test('without it (the old code) the same writer dies with EPIPE midway', () => {
  const r = throughHead(false);
  assert.doesNotMatch(r.stderr, /run finished/);
  assert.match(r.stderr, /EPIPE/);
});
