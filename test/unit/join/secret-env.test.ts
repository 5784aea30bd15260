/**
 * The join secrets on the CLI (issue 24, F3): given in the environment they are read once and leave
 * it, so a command a step runs (through the real sh wrapper) does not inherit them — proven from that
 * child's /proc/self/environ — while the step still has them; given as flags they work, with a
 * warning on stderr that holds no secret byte.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cli } from '../../helpers/cli.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const TOKEN = 'abcdef.0123456789abcdef';
const KEY = 'd'.repeat(64);

test('KUBECEPTION_TOKEN / KUBECEPTION_CERTIFICATE_KEY reach the run, not the commands its steps start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-secret-env-'));
  try {
    const out = join(dir, 'child-environ');
    mkdirSync(join(dir, 'tasks'));
    writeFileSync(join(dir, 'kubeception.config.ts'), "export default { distro: 'debian' };\n");
    writeFileSync(join(dir, 'tasks', 'envcheck.ts'), `import { step, task } from '${ROOT}/lib/engine/dsl.ts';
export default task('envcheck', [step('env').run(async (ctx) => {
  await ctx.sh.exec(['sh', '-c', 'cat /proc/self/environ > "$1"', 'sh', ${JSON.stringify(out)}]);
  const left = ['KUBECEPTION_TOKEN', 'KUBECEPTION_CERTIFICATE_KEY'].filter((k) => k in process.env);
  return { changed: true, detail: \`token \${ctx.options.token ? 'given' : 'missing'}, key \${ctx.options.certificateKey ? 'given' : 'missing'}, left in process.env: \${left.join(',') || 'none'}\` };
})]);
`);
    const r = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), join(ROOT, 'bin/kubeception.ts'), 'run', 'envcheck', '--output', 'json'], {
      cwd: dir, encoding: 'utf8', timeout: 60_000,
      env: { ...process.env, KUBECEPTION_TOKEN: TOKEN, KUBECEPTION_CERTIFICATE_KEY: KEY, KUBECEPTION_TEST_CANARY: 'inherited' },
    });
    assert.equal(r.status, 0, r.stderr);
    const done = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.event === 'step-done');
    assert.equal(done?.detail, 'token given, key given, left in process.env: none');
    const env = readFileSync(out, 'utf8').split('\0').filter(Boolean);
    assert.ok(env.includes('KUBECEPTION_TEST_CANARY=inherited'), 'the child inherits the environment');
    assert.deepEqual(env.filter((e) => /^KUBECEPTION_(TOKEN|CERTIFICATE_KEY)=/.test(e)), [], 'a join secret reached a child of the run');
    assert.ok(!env.join('\n').includes(TOKEN.slice(7)) && !env.join('\n').includes(KEY));
    assert.equal(r.stderr.includes('warning: --'), false, 'no flag warning for the environment form');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--token and --certificate-key still work, with a warning that names the safe form and holds no secret', async () => {
  const r = await cli(['plan', 'join', '--distro', 'debian', '--order-only', '--url', 'https://10.250.0.9:30000', '--token', TOKEN, '--ca-cert-hash', `sha256:${'a'.repeat(64)}`, '--control-plane', `--certificate-key=${KEY}`]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /^warning: --token puts the token on the command line, which every local user can read .*KUBECEPTION_TOKEN=.*--token-file/m);
  assert.match(r.stderr, /^warning: --certificate-key puts the key on the command line.*KUBECEPTION_CERTIFICATE_KEY=/m);
  for (const text of [r.stdout, r.stderr]) assert.ok(!text.includes(TOKEN.slice(7)) && !text.includes(KEY), text);
});
