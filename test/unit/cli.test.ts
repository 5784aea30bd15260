import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cli } from '../helpers/cli.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('plan bootstrap: ordered steps with their needs', async () => {
  const r = await cli(['plan', 'bootstrap', '--distro', 'debian', '--order-only']);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n').filter((l) => /^\s*\d+\. /.test(l));
  const ids = lines.map((l) => l.trim().split(/\s+/)[1]);
  assert.deepEqual(ids.slice(0, 3), ['preflight', 'certs', 'kubeconfig']);
  assert.ok(ids.indexOf('kubelet-start') < ids.indexOf('etcd'), 'etcd starts while the kubelet creates the bootstrap pods');
  assert.deepEqual(ids.slice(-2), ['remove-bootstrap-control-plane', 'secrets-encryption'], 'Secrets are rewritten once only the self-hosted apiservers run');
  assert.ok(ids.indexOf('apiserver-config') < ids.indexOf('bootstrap-control-plane'), 'the hardening files are there before the bootstrap apiserver starts');
  assert.ok(ids.indexOf('join-service') < ids.indexOf('wait-self-hosted-control-plane'), 'the join service goes in while the self-hosted apiserver starts');
  assert.ok(ids.indexOf('apiserver-recovery') < ids.indexOf('kubelet-pivot'), 'the recovery copy is in place before the pivot');
  assert.ok(ids.indexOf('wait-bootstrap-control-plane') < ids.indexOf('bootstrap-scheduler') && ids.indexOf('bootstrap-scheduler') < ids.indexOf('self-hosted-control-plane'), 'the bootstrap scheduler starts once the bootstrap apiserver is ready, before the self-hosted pods exist');
  assert.ok(ids.includes('recovery-watcher') && ids.indexOf('recovery-watcher') < ids.indexOf('wait-self-hosted-control-plane'), 'the watcher unit goes in while the self-hosted apiserver starts');
  assert.match(lines[1]!, /needs: preflight/);
  assert.match(lines[ids.indexOf('etcd')]!, /needs: certs$|needs: certs\s/);
});

test('plan --output json: one parseable event naming every step', async () => {
  const r = await cli(['plan', 'bootstrap', '--distro', 'debian', '--order-only', '--output', 'json']);
  assert.equal(r.code, 0, r.stderr);
  const ev = JSON.parse(r.stdout.trim());
  assert.equal(ev.event, 'plan');
  assert.ok(ev.steps.every((s: any) => typeof s.id === 'string' && Array.isArray(s.needs)));
});

test('plan with the kubic distro: the kubic override replaces preflight and inserts container-runtime', async () => {
  const r = await cli(['plan', 'bootstrap', '--distro', 'kubic', '--order-only', '--output', 'json']);
  assert.equal(r.code, 0, r.stderr);
  const steps = JSON.parse(r.stdout).steps as { id: string; title: string; needs: string[] }[];
  assert.match(steps.find((s) => s.id === 'preflight')!.title, /kubic/);
  const i = steps.findIndex((s) => s.id === 'container-runtime');
  assert.ok(i > 0 && i < steps.findIndex((s) => s.id === 'kubelet-start'));
  assert.ok(steps.find((s) => s.id === 'kubelet-start')!.needs.includes('container-runtime'));
});

test('--skip/--only show up as skip reasons in the plan', async () => {
  const r = await cli(['plan', 'bootstrap', '--distro', 'debian', '--order-only', '--only', 'preflight,certs', '--skip', 'certs']);
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
  ['--order-only on a real run', ['run', 'bootstrap', '--distro', 'debian', '--only', 'preflight', '--order-only'], /--order-only applies to `plan`/],
  // Durations beyond what the clock or a token Secret can hold (issue 24): refused before any API call.
  ['token create --ttl beyond its maximum', ['token', 'create', '--ttl', '99999999999h', '--distro', 'debian'], /--ttl 99999999999h is more than the maximum 8760h/],
  ['--discovery-timeout beyond its maximum', ['run', 'join', '--distro', 'debian', '--url', 'https://10.250.0.9:30000', '--discovery-timeout', '9999999h'], /--discovery-timeout .*at most 24h/],
  ['upgrade apply --timeout beyond its maximum', ['upgrade', 'apply', 'v1.35.4', '--timeout', '9999999h', '--distro', 'debian'], /--timeout .*at most 24h/],
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
  writeFileSync(join(dir, 'tasks', 'bootstrap.ts'), `import { step, task } from '${ROOT}/lib/engine/dsl.ts';\nexport default task('bootstrap', [step('a').needs('b'), step('b').needs('a')]);\n`);
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
    `import { step, task } from '${ROOT}/lib/engine/dsl.ts';\nexport default task('demo', [step('one').run(() => ({ changed: false })), step('two').needs('one').skipIf(() => 'nothing to do'), step('three').needs('two').run(() => { throw new Error('kaput'); })]);\n`,
  );
  writeFileSync(join(dir, 'kubeception.config.ts'), `export default { distro: 'debian', nodeName: 'Demo-Node' };\n`);
  const t0 = Date.now();
  const r = await cli(['run', 'demo', '--output', 'json'], dir);
  const t1 = Date.now();
  assert.equal(r.code, 1);
  const events = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(events.map((e) => e.event), ['task-started', 'step-started', 'step-done', 'step-skipped', 'step-started', 'step-failed', 'task-done', 'result']);
  assert.equal(events[3].reason, 'nothing to do');
  assert.equal(events[5].step, 'three');
  const { time, durationMs, ...rest } = events[7];
  // nodeName is the config's, resolved (lower-cased); the run's duration is the task's, within the call.
  assert.deepEqual(rest, { event: 'result', task: 'demo', status: 'failed', failedStep: 'three', changed: [], unchanged: ['one'], skipped: ['two'], nodeName: 'demo-node' });
  assert.equal(durationMs, events[6].durationMs, "the result's duration is the task's");
  assert.ok(typeof durationMs === 'number' && durationMs >= 0 && durationMs <= t1 - t0, `durationMs ${durationMs} within the ${t1 - t0} ms of the call`);
  assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.ok(Date.parse(time) >= t0 && Date.parse(time) <= t1, `time ${time} within the call`);
  assert.match(r.stderr, /failed at step three/);
});

test('plan runs step bodies against the recording backends: it lists writes, unit actions, commands; later steps read the planned content; nothing is written', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-cli-'));
  const target = join(dir, 'out');
  mkdirSync(join(dir, 'tasks'));
  mkdirSync(target);
  writeFileSync(join(target, 'same.conf'), 'a\nb\n');
  writeFileSync(join(target, 'changed.conf'), 'a\nb\nc\n');
  writeFileSync(
    join(dir, 'tasks', 'demo.ts'),
    `import { step, task } from '${ROOT}/lib/engine/dsl.ts';
export default task('demo', [
  step('write').run(async (ctx) => {
    const a = await ctx.files.write('${target}/new.key', 'secret-bytes-1\\nsecret-bytes-2\\n', { mode: 0o600 });
    const b = await ctx.files.write('${target}/same.conf', 'a\\nb\\n', { mode: 0o644 });
    const c = await ctx.files.write('${target}/changed.conf', 'a\\nB\\nc\\nd\\n', { mode: 0o644 });
    return { changed: a || b || c, detail: 'wrote' };
  }),
  step('reads-overlay').needs('write').run(async (ctx) => ({ changed: false, detail: 'sees ' + (await ctx.files.read('${target}/new.key'))?.split('\\n').length + ' lines; lists ' + (await ctx.files.list('${target}')).join(' ') })),
  step('unit').needs('write').run(async (ctx) => { await ctx.sh.exec(['touch', '${target}/ran']); return { changed: true }; }),
]);
`,
  );
  writeFileSync(join(dir, 'kubeception.config.ts'), `export default { distro: 'debian' };\n`);
  const r = await cli(['plan', 'demo'], dir);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`create  ${target}/new\\.key \\(0600, 2 lines\\)`));
  assert.match(r.stdout, new RegExp(`update  ${target}/changed\\.conf \\(0644, \\+2 −1 lines\\)`));
  assert.doesNotMatch(r.stdout, /(create|update|chmod) +\S+same\.conf/);
  assert.match(r.stdout, /reads-overlay .*no changes \(sees 3 lines; lists changed\.conf new\.key same\.conf\)/);
  assert.match(r.stdout, new RegExp(`run     touch ${target}/ran`));
  assert.match(r.stdout, /2 step\(s\) would change the host: 2 file\(s\), 0 unit action\(s\), 1 command\(s\), 0 API object\(s\)/);
  assert.doesNotMatch(r.stdout, /secret-bytes/);
  assert.deepEqual(readdirSync(target).sort(), ['changed.conf', 'same.conf']);
  assert.equal(readFileSync(join(target, 'changed.conf'), 'utf8'), 'a\nb\nc\n');
  const j = JSON.parse((await cli(['plan', 'demo', '--output', 'json'], dir)).stdout);
  assert.deepEqual(j.totals, { steps: 2, files: 2, units: 0, commands: 1, objects: 0 });
  assert.equal(j.steps[0].changes.files[0].change, 'create');
});

test('Deno prints the same plan as Node (node_modules only, no network)', () => {
  const args = ['plan', 'bootstrap', '--distro', 'debian', '--order-only'];
  const node = spawnSync(process.execPath, [join(ROOT, 'bin/kubeception.js'), ...args], { cwd: ROOT, encoding: 'utf8' });
  const deno = spawnSync(join(ROOT, 'node_modules/.bin/deno'), ['run', '-A', '--no-remote', join(ROOT, 'bin/kubeception.ts'), ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, DENO_NO_UPDATE_CHECK: '1' } });
  assert.equal(node.status, 0, node.stderr);
  assert.equal(deno.status, 0, deno.stderr);
  assert.equal(deno.stdout, node.stdout);
  assert.match(deno.stdout, /1\. preflight/);
});
