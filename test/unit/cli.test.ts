import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cli } from '../helpers/cli.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('plan bootstrap: ordered steps with their needs', async () => {
  const r = await cli(['plan', 'bootstrap', '--distro', 'debian']);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n').filter((l) => /^\s*\d+\. /.test(l));
  const ids = lines.map((l) => l.trim().split(/\s+/)[1]);
  assert.deepEqual(ids.slice(0, 4), ['preflight', 'certs', 'kubeconfig', 'etcd']);
  assert.equal(ids.at(-1), 'join-service');
  assert.match(lines[1]!, /needs: preflight/);
  assert.match(lines[3]!, /needs: certs/);
});

test('plan --output json: one parseable event naming every step', async () => {
  const r = await cli(['plan', 'bootstrap', '--distro', 'debian', '--output', 'json']);
  assert.equal(r.code, 0, r.stderr);
  const ev = JSON.parse(r.stdout.trim());
  assert.equal(ev.event, 'plan');
  assert.ok(ev.steps.every((s: any) => typeof s.id === 'string' && Array.isArray(s.needs)));
});

test('plan with the kubic distro: the kubic override replaces preflight and inserts container-runtime', async () => {
  const r = await cli(['plan', 'bootstrap', '--distro', 'kubic', '--output', 'json']);
  assert.equal(r.code, 0, r.stderr);
  const steps = JSON.parse(r.stdout).steps as { id: string; title: string; needs: string[] }[];
  assert.match(steps.find((s) => s.id === 'preflight')!.title, /kubic/);
  const i = steps.findIndex((s) => s.id === 'container-runtime');
  assert.ok(i > 0 && i < steps.findIndex((s) => s.id === 'kubelet-start'));
  assert.ok(steps.find((s) => s.id === 'kubelet-start')!.needs.includes('container-runtime'));
});

test('--skip/--only show up as skip reasons in the plan', async () => {
  const r = await cli(['plan', 'bootstrap', '--distro', 'debian', '--only', 'preflight,certs', '--skip', 'certs']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /certs .*skip: skipped by --skip/);
  assert.match(r.stdout, /etcd .*skip: not selected by --only/);
});

const usage: [string, string[], RegExp][] = [
  ['unknown command', ['launch', 'bootstrap'], /unknown command "launch"/],
  ['unknown task', ['plan', 'frobnicate'], /task "frobnicate"/],
  ['unknown flag', ['plan', 'bootstrap', '--frobnicate'], /unknown flag --frobnicate/],
  ['unknown step in --only', ['plan', 'bootstrap', '--distro', 'debian', '--only', 'etcdd'], /no step "etcdd"/],
  ['bad --output', ['plan', 'bootstrap', '--output', 'xml'], /--output must be/],
  ['unknown distro', ['plan', 'bootstrap', '--distro', 'gentoo'], /distro "gentoo".*known: debian, kubic/s],
  ['missing --config file', ['plan', 'bootstrap', '--config', '/nonexistent/k.ts'], /--config \/nonexistent\/k.ts/],
  ['join without --url', ['run', 'join', '--distro', 'debian'], /--url/],
];
for (const [name, argv, msg] of usage)
  test(`exit 2: ${name}`, async () => {
    const r = await cli(argv);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, msg);
  });

test('config from the working directory wins; a type error names the field (exit 2)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-cli-'));
  writeFileSync(join(dir, 'kubeception.config.ts'), `export default { distro: 'debian', networking: { podSubnet: 42 } };\n`);
  const r = await cli(['plan', 'bootstrap'], dir);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /kubeception\.config\.ts: networking\.podSubnet/);
});

test('a task file in ./tasks of the working directory is preferred; a cycle there is exit 2 naming the steps', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-cli-'));
  mkdirSync(join(dir, 'tasks'));
  writeFileSync(join(dir, 'tasks', 'bootstrap.ts'), `import { step, task } from '${ROOT}/lib/dsl.ts';\nexport default task('bootstrap', [step('a').needs('b'), step('b').needs('a')]);\n`);
  writeFileSync(join(dir, 'kubeception.config.ts'), `export default { distro: 'debian' };\n`);
  const r = await cli(['plan', 'bootstrap'], dir);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /task-cycle/);
  assert.match(r.stderr, /a → b → a/);
});

test('run --output json of a site task: every line is a JSON event; a failed step exits 1 and is named', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-cli-'));
  mkdirSync(join(dir, 'tasks'));
  writeFileSync(
    join(dir, 'tasks', 'demo.ts'),
    `import { step, task } from '${ROOT}/lib/dsl.ts';\nexport default task('demo', [step('one').run(() => ({ changed: false })), step('two').needs('one').skipIf(() => 'nothing to do'), step('three').needs('two').run(() => { throw new Error('kaput'); })]);\n`,
  );
  writeFileSync(join(dir, 'kubeception.config.ts'), `export default { distro: 'debian' };\n`);
  const r = await cli(['run', 'demo', '--output', 'json'], dir);
  assert.equal(r.code, 1);
  const events = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(events.map((e) => e.event), ['task-started', 'step-started', 'step-done', 'step-skipped', 'step-started', 'step-failed', 'task-done', 'result']);
  assert.equal(events[3].reason, 'nothing to do');
  assert.equal(events[5].step, 'three');
  assert.deepEqual({ ...events[7], time: undefined, durationMs: undefined }, { event: 'result', task: 'demo', status: 'failed', failedStep: 'three', durationMs: undefined, changed: [], unchanged: ['one'], skipped: ['two'], nodeName: events[7].nodeName, time: undefined });
  assert.match(r.stderr, /failed at step three/);
});

test('Deno prints the same plan as Node (node_modules only, no network)', () => {
  const args = ['plan', 'bootstrap', '--distro', 'debian'];
  const node = spawnSync(process.execPath, [join(ROOT, 'bin/kubeception.js'), ...args], { cwd: ROOT, encoding: 'utf8' });
  const deno = spawnSync(join(ROOT, 'node_modules/.bin/deno'), ['run', '-A', '--no-remote', join(ROOT, 'bin/kubeception.ts'), ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, DENO_NO_UPDATE_CHECK: '1' } });
  assert.equal(node.status, 0, node.stderr);
  assert.equal(deno.status, 0, deno.stderr);
  assert.equal(deno.stdout, node.stdout);
  assert.match(deno.stdout, /1\. preflight/);
});
