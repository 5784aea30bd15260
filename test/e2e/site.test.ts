/**
 * Site customisation as the README describes it, with kubeception installed from a packed tarball (not
 * from the repo): `npm pack`, install into a clean directory, `npx kubeception plan bootstrap`; then on a
 * bed host a site made by `kubeception init`, whose tasks/bootstrap.ts is the package's verbatim plus a
 * step after mark-control-plane that writes a marker file. `plan` lists the step; `run --output json |
 * head -n 3` still completes the bootstrap (stdout closing early never aborts a run); the marker exists
 * and the Node is Ready. A typo'd import is refused first: exit 2, naming file and symbol, host unchanged.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { bootHost, type Host } from '../bed/bed.ts';
import { importKubeceptionImage } from '../bed/kubeception-image.ts';
import { assertSameTree, snapshot } from '../helpers/bed-cli.ts';
import { installTarball, lockFor, packRepo } from '../helpers/pack.ts';

const SITE = '/root/site';
const MARKER = '/etc/kubernetes/site-marker';
const ADMIN = '/etc/kubernetes/admin.conf';
const MARKER_STEP = `  step('site-marker').needs('mark-control-plane').title('site-marker: a step of this site').run(async (ctx) => ({ changed: await ctx.files.write('${MARKER}', \`\${ctx.config.nodeName}\\n\`, { mode: 0o644 }) })),\n`;

/** The shipped task file with the marker step inserted right after mark-control-plane. */
function withMarker(shipped: string): string {
  const i = shipped.indexOf('.run(markControlPlane),');
  assert.ok(i > 0, 'tasks/bootstrap.ts has a mark-control-plane step');
  const eol = shipped.indexOf('\n', i) + 1;
  return shipped.slice(0, eol) + MARKER_STEP + shipped.slice(eol);
}

const sh = (host: Host, script: string, timeoutMs = 600_000) => host.exec(['bash', '-c', script], { cwd: SITE, timeoutMs });

describe('a site made by init, kubeception installed from a packed tarball', { timeout: 1_800_000 }, () => {
  let tarball: string;
  let installed: string;
  let host: Host;
  before(() => {
    tarball = packRepo();
    installed = installTarball(tarball);
  });
  after(async () => {
    await host?.destroy();
    for (const d of [installed, tarball && dirname(tarball)]) if (d) rmSync(d, { recursive: true, force: true });
  });

  test('npm pack → install into a clean directory → npx kubeception plan bootstrap --order-only', () => {
    const kc = join(installed, 'node_modules', 'kubeception');
    assert.ok(existsSync(join(kc, 'lib', 'steps', 'index.ts')));
    assert.ok(!existsSync(join(kc, 'test')), 'tests are not packed');
    const out = execFileSync('npx', ['kubeception', 'plan', 'bootstrap', '--order-only'], { cwd: installed, encoding: 'utf8' }); // on this machine: read nothing of it
    assert.match(out, /^task bootstrap: \d+ steps/);
    assert.match(out, new RegExp(`task file: ${kc}/tasks/bootstrap.ts`));
  });

  test('on a bed host: init writes the site; its tasks are the package\'s, verbatim', async () => {
    host = await bootHost({ name: 'u14site', kubelet: true });
    await importKubeceptionImage(host);
    const init = await host.exec(['node', join(installed, 'node_modules/kubeception/bin/kubeception.js'), 'init', SITE, '--kubeception', tarball], { timeoutMs: 120_000 });
    assert.equal(init.code, 0, init.stderr);
    const shipped = readFileSync(join(installed, 'node_modules/kubeception/tasks/bootstrap.ts'), 'utf8');
    assert.equal(await host.readFile(`${SITE}/tasks/bootstrap.ts`), shipped);
    // The one edit of init's config: this bed host keeps its own CNI (as the bootstrap e2e does).
    const config = await host.readFile(`${SITE}/kubeception.config.ts`);
    assert.match(config, /from 'kubeception';/);
    await host.writeFile(`${SITE}/kubeception.config.ts`, config.replace(/networking: \{\n/, "networking: {\n    plugin: 'none',\n"));
    const { packageJson, packageLock } = lockFor('site', tarball, await host.readFile(`${SITE}/package.json`));
    assert.equal(JSON.parse(packageJson).dependencies.kubeception, `file:${tarball}`);
    await host.writeFile(`${SITE}/package-lock.json`, packageLock);
    const ci = await sh(host, 'npm ci --offline --no-audit --no-fund --loglevel=error');
    assert.equal(ci.code, 0, ci.stderr);
    assert.ok(await host.exists(`${SITE}/node_modules/kubeception/lib/steps/index.ts`));
  });

  test('a typo in an import: exit 2 naming the file and the symbol; nothing on the host changed', async () => {
    const good = await host.readFile(`${SITE}/tasks/bootstrap.ts`);
    assert.match(good, /\bensureEtcd\b/);
    await host.writeFile(`${SITE}/tasks/bootstrap.ts`, good.replace(/\bensureEtcd\b/g, 'ensureEtcdd'));
    const before = await snapshot(host);
    const r = await sh(host, 'npx kubeception run bootstrap');
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /error task-import: \/root\/site\/tasks\/bootstrap\.ts:\d+: ensureEtcdd/);
    assert.match(r.stderr, /did you mean "ensureEtcd"/);
    assertSameTree(before, await snapshot(host), 'typo\'d import');
    await host.writeFile(`${SITE}/tasks/bootstrap.ts`, withMarker(good));
  });

  test('plan lists the site step right after mark-control-plane', async () => {
    const r = await sh(host, 'npx kubeception plan bootstrap');
    assert.equal(r.code, 0, r.stderr);
    const ids = [...r.stdout.matchAll(/^\s*\d+\. (\S+)/gm)].map((m) => m[1]);
    assert.equal(ids[ids.indexOf('mark-control-plane') + 1], 'site-marker', r.stdout);
    assert.match(r.stdout, /task file: \/root\/site\/tasks\/bootstrap\.ts/);
    assert.match(r.stderr, /^warning: task file \/root\/site\/tasks\/bootstrap\.ts replaces the package's tasks\/bootstrap\.ts$/m);
  });

  test('run --output json | head -n 3: the run completes anyway; the marker exists; the Node is Ready', async () => {
    const r = await sh(host, 'npx kubeception run bootstrap --output json 2>/root/run.err | head -n 3 >/root/run.head; echo "exit=${PIPESTATUS[0]}"', 900_000);
    const err = await host.readFile('/root/run.err');
    assert.match(r.stdout, /exit=0/, err);
    assert.equal((await host.readFile('/root/run.head')).trim().split('\n').length, 3);
    assert.doesNotMatch(err, /EPIPE|internal error/);
    assert.match(err, /bootstrap done in/);
    assert.match(err, /export KUBECONFIG=\/etc\/kubernetes\/admin\.conf/);
    assert.doesNotMatch(err, /[a-z0-9]{6}\.[a-z0-9]{16}/, 'no token on stderr (neither as a flag nor as KUBECEPTION_TOKEN=)');
    assert.equal((await host.readFile(MARKER)).trim(), host.name);
    const ready = await sh(host, `for i in $(seq 90); do kubectl --kubeconfig ${ADMIN} get node ${host.name} --no-headers 2>/dev/null | grep -q ' Ready ' && exit 0; sleep 2; done; exit 1`);
    assert.equal(ready.code, 0, 'Node Ready');
  });

  test('converged re-run: the summary says how to use kubectl and never reprints the token secret', async () => {
    const r = await sh(host, 'npx kubeception run bootstrap');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /site-marker/);
    assert.match(r.stdout, /export KUBECONFIG=\/etc\/kubernetes\/admin\.conf/);
    assert.match(r.stdout, /kubeception token create --print-join-command/);
    assert.doesNotMatch(r.stdout + r.stderr, /[a-z0-9]{6}\.[a-z0-9]{16}/, 'no token secret');
  });
});
