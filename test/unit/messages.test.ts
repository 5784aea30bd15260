/**
 * Messages that tell the truth (issue 14): each misleading message the new-user trial found, fixed,
 * and "did you mean" for unknown config fields, commands, flags, tasks, step ids and preflight ids.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli } from '../helpers/cli.ts';
import { parseConfig, parseDistro } from '../../lib/config/schema.ts';
import { resolveConfig } from '../../lib/config/validate.ts';
import { parseToml } from '../../lib/config/toml.ts';
import { ConfigError, InputError, PreflightError } from '../../lib/errors.ts';
import { runPreflight, type Check } from '../../lib/steps/preflight/preflight.ts';
import { checkIgnoreIds } from '../../lib/steps/preflight/preflight-ids.ts';
import { closestName } from '../../lib/util/suggest.ts';
import type { Context } from '../../lib/context.ts';

const distro = parseDistro(parseToml(readFileSync(new URL('../../distros/debian/debian.toml', import.meta.url), 'utf8'), 'debian.toml'), 'debian', 'debian.toml');
const facts = { hostname: 'node-a', addresses: [{ address: '10.250.0.2', cidr: '10.250.0.2/16' }] };

function site(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kc-msg-'));
  writeFileSync(join(dir, 'kubeception.config.ts'), `export default { distro: 'debian' };\n`);
  return dir;
}

const configError = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e;
  }
  return assert.fail('no error');
};

test('closestName: typos and prefixes match; unrelated names do not', () => {
  assert.equal(closestName('podSubnett', ['podSubnet', 'serviceSubnet']), 'podSubnet');
  assert.equal(closestName('bootsrap', ['bootstrap', 'join']), 'bootstrap');
  assert.equal(closestName('PORT-6443', ['Port-6443', 'Port-10250']), 'Port-6443');
  assert.equal(closestName('xyz', ['bootstrap', 'join']), undefined);
});

test('an unknown config field names the field, suggests the right one, and the fix renames it', () => {
  const e = configError(() => parseConfig({ networking: { podSubnett: '10.244.0.0/16' } }, 'cfg.ts'));
  assert.equal(e.what, 'cfg.ts: networking.podSubnett');
  assert.match(e.why, /unknown field "podSubnett" \(did you mean "podSubnet"\?\)/);
  assert.equal(e.fix, 'rename networking.podSubnett to networking.podSubnet');
  const top = configError(() => parseConfig({ kubernetesVersoin: 'v1.34.4' }, 'cfg.ts'));
  assert.match(top.why, /did you mean "kubernetesVersion"/);
});

test('a bad podSubnet suggests a pod subnet, never the default serviceSubnet 10.96.0.0/12', () => {
  const e = configError(() => resolveConfig(parseConfig({ networking: { podSubnet: '10.244.0.0/33' } }, 'cfg.ts'), distro, facts, 'cfg.ts'));
  assert.match(e.what, /networking\.podSubnet/);
  assert.doesNotMatch(`${e.why} ${e.fix}`, /10\.96\.0\.0\/12/);
  assert.match(e.fix, /10\.244\.0\.0\/16/);
  const s = configError(() => resolveConfig(parseConfig({ networking: { serviceSubnet: 'nope' } }, 'cfg.ts'), distro, facts, 'cfg.ts'));
  assert.match(s.fix, /serviceSubnet to a CIDR such as 10\.96\.0\.0\/12/);
});

test('an unknown command prints one line and a pointer to --help, not the usage', async () => {
  const r = await cli(['rnu', 'bootstrap'], site());
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown command "rnu" \(did you mean "run"\?\)/);
  assert.match(r.stderr, /fix: .*kubeception --help/);
  assert.doesNotMatch(r.stderr + r.stdout, /kubeception run <task>/);
  assert.ok(r.stderr.trim().split('\n').length <= 3, r.stderr);
});

test('an unknown flag suggests the right one; --version prints the version', async () => {
  const r = await cli(['plan', 'bootstrap', '--dryrun'], site());
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown flag --dryrun \(did you mean "--dry-run"\?\)/);
  assert.doesNotMatch(r.stderr, /kubeception run <task>/);
  const v = await cli(['--version']);
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  assert.deepEqual(v, { code: 0, stdout: `kubeception ${pkg.version}\n`, stderr: '' });
});

test('an unknown task or step id suggests the right one', async () => {
  const t = await cli(['plan', 'bootsrap'], site());
  assert.equal(t.code, 2);
  assert.match(t.stderr, /did you mean "bootstrap"/);
  const s = await cli(['plan', 'bootstrap', '--only', 'etdc'], site());
  assert.equal(s.code, 2);
  assert.match(s.stderr, /task bootstrap has no step "etdc" \(did you mean "etcd"\?\)/);
  assert.match(s.stderr, /fix: use step ids of bootstrap: preflight, certs/);
});

const checks: Check[] = [
  { id: 'Port-6443', run: async () => ({ message: 'port 6443 is in use', fix: 'stop what listens there' }) },
  { id: 'JoinToken', ignorable: false, run: async () => ({ message: '--token is missing', fix: 'pass --token' }) },
];
const ctx = (flag: string[], ignore = flag) => ({ options: { ignorePreflightErrors: new Set(ignore), ignorePreflightErrorsFlag: flag }, log: { info() {}, warn() {} } }) as unknown as Context;

test('--ignore-preflight-errors refuses an unknown id, listing the known ones with "did you mean"', async () => {
  assert.throws(() => checkIgnoreIds(['port-6443'], checks), (e: unknown) => {
    assert.ok(e instanceof InputError);
    assert.equal(e.code, 'preflight-ignore-unknown');
    assert.match(e.why, /"port-6443" \(did you mean "Port-6443"\?\)/);
    assert.equal(e.fix, 'use ids from: all, Port-6443');
    return true;
  });
  checkIgnoreIds(['all', 'Port-6443'], checks);
  await assert.rejects(runPreflight(ctx(['Prot-6443']), checks), /preflight-ignore-unknown|no preflight check/);
});

test('a malformed flag is not "fixed" by --ignore-preflight-errors: the hint appears only for host checks', async () => {
  const onlyFlag = new PreflightError([{ id: 'JoinToken', message: '--token is missing', fix: 'pass --token', ignorable: false }]);
  assert.doesNotMatch(onlyFlag.fix, /ignore-preflight-errors/);
  await assert.rejects(runPreflight(ctx([], ['all']), checks), (e: unknown) => {
    assert.ok(e instanceof PreflightError);
    assert.deepEqual(e.checks.map((c) => c.id), ['JoinToken']);
    assert.doesNotMatch(e.fix, /ignore-preflight-errors/);
    return true;
  });
  const both = new PreflightError([{ id: 'Port-6443', message: 'in use', fix: 'stop it' }, { id: 'JoinToken', message: 'missing', fix: 'pass it', ignorable: false }]);
  assert.match(both.fix, /--ignore-preflight-errors=Port-6443\)$/);
});

test('a task file with a typo in an import: exit 2 naming the file, line, symbol and step', async () => {
  const dir = site();
  mkdirSync(join(dir, 'tasks'));
  const file = join(dir, 'tasks', 'bootstrap.ts');
  writeFileSync(file, `import { step, task } from 'kubeception/dsl';\nimport { ensureEtcdd } from 'kubeception/steps';\n\nexport default task('bootstrap', [\n  step('etcd').run(ensureEtcdd),\n]);\n`);
  const r = await cli(['plan', 'bootstrap'], dir);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, new RegExp(`error task-import: ${file}:2: ensureEtcdd`));
  assert.match(r.stderr, /kubeception\/steps has no export named "ensureEtcdd" \(did you mean "ensureEtcd"\?\); used by step etcd/);
});

test('a step whose function is undefined is refused at load naming file, line and step (plan no longer passes)', async () => {
  const dir = site();
  mkdirSync(join(dir, 'tasks'));
  const file = join(dir, 'tasks', 'demo.ts');
  writeFileSync(file, `import { step, task } from 'kubeception/dsl';\nconst notAFunction = undefined;\nexport default task('demo', [\n  step('a').run(() => ({ changed: false })),\n  step('b').skipIf(notAFunction as never).run(() => ({ changed: false })),\n]);\n`);
  const r = await cli(['plan', 'demo'], dir);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, new RegExp(`error task-invalid: ${file}:5 \\(step b\\)`));
  assert.match(r.stderr, /\.skipIf\(\) needs a function, got undefined/);
});
