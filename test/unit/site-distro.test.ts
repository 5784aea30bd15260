/**
 * A third distro, made the way docs/configuration.md ("A distro of your own") says: the site copies
 * the package's distros/kubic to `<site>/distros/acme/`, renames kubic.toml to acme.toml, edits the
 * settings and adds a step to the overrides. The CLI then knows `acme` (`--distro acme` or the
 * config's `distro`), loads its settings, and runs the copied overrides (CRI-O's steps) with the
 * site's own step. A site distro others could have written is refused before it runs, as site task
 * files are. Real files in a temp dir, the real CLI in-process.
 */
import assert from 'node:assert/strict';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cli } from '../helpers/cli.ts';
import { loadConfig } from '../../lib/config/load.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const facts = { hostname: 'node-a', addresses: [{ address: '10.250.0.2', cidr: '10.250.0.2/16' }] };

describe('a site distro copied from distros/kubic', () => {
  const base = mkdtempSync(join(tmpdir(), 'kc-site-distro-'));
  chmodSync(base, 0o755);
  after(() => rmSync(base, { recursive: true, force: true }));
  let n = 0;

  /** A site with `distros/acme/` copied from the package's kubic and edited; `configDistro` goes into its config. */
  const site = (configDistro?: string) => {
    const dir = join(base, `site${n++}`);
    const acme = join(dir, 'distros', 'acme');
    cpSync(join(ROOT, 'distros', 'kubic'), acme, { recursive: true });
    renameSync(join(acme, 'kubic.toml'), join(acme, 'acme.toml'));
    const toml = readFileSync(join(acme, 'acme.toml'), 'utf8')
      .replace('etcdEnvironmentFile = "/etc/sysconfig/etcd"', 'etcdEnvironmentFile = "/etc/acme/etcd.env"')
      .replace('criSocket = "unix:///var/run/crio/crio.sock"', 'criSocket = "unix:///run/acme/crio.sock"')
      .replace('containerRuntime = "crio.service"', 'containerRuntime = "acme-crio.service"');
    writeFileSync(join(acme, 'acme.toml'), toml);
    // The site's own step after the copied ones; importing the file leaves a marker.
    const overrides = readFileSync(join(acme, 'overrides.ts'), 'utf8').replace(
      ".insertBefore('kubelet-start', containerRuntime()),",
      ".insertBefore('kubelet-start', containerRuntime())\n    .insertAfter('preflight', step('acme-motd').needs('preflight').run(async () => ({ changed: false }))),",
    );
    assert.match(overrides, /acme-motd/, 'the copy was edited');
    writeFileSync(join(acme, 'overrides.ts'), `import { writeFileSync as __w } from 'node:fs';\n__w(${JSON.stringify(join(dir, 'RAN-overrides'))}, 'ran');\n${overrides}`);
    writeFileSync(join(dir, 'kubeception.config.ts'), `export default ${JSON.stringify(configDistro ? { distro: configDistro } : {})};\n`);
    return { dir, ranOverrides: () => existsSync(join(dir, 'RAN-overrides')) };
  };

  test('its settings load: the edited paths, socket and runtime unit; the package\'s kubic is unchanged', async () => {
    const s = site();
    const { config } = await loadConfig({ packageDir: ROOT, cwd: s.dir, distro: 'acme', facts });
    assert.equal(config.distro.name, 'acme');
    assert.equal(config.distro.paths.etcdEnvironmentFile, '/etc/acme/etcd.env');
    assert.equal(config.distro.units.containerRuntime, 'acme-crio.service');
    assert.equal(config.kubelet.criSocket, 'unix:///run/acme/crio.sock');
    assert.equal(config.distro.paths.kubeletConfigDir, '/etc/kubernetes/kubelet', 'the rest as copied');
    const kubic = await loadConfig({ packageDir: ROOT, cwd: s.dir, distro: 'kubic', facts });
    assert.equal(kubic.config.distro.paths.etcdEnvironmentFile, '/etc/sysconfig/etcd');
  });

  test('plan --distro acme runs the copied overrides (container-runtime before kubelet-start) and the site\'s step', async () => {
    const s = site();
    const r = await cli(['plan', 'bootstrap', '--order-only', '--distro', 'acme'], s.dir);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.ok(s.ranOverrides(), 'the site\'s overrides.ts was imported');
    assert.match(r.stdout, /distro: acme/);
    // container-runtime is the copied kubic override's step, acme-motd the site's own.
    assert.match(r.stdout, /acme-motd[\s\S]*container-runtime[\s\S]*kubelet-start\s+needs: .*container-runtime/, r.stdout);
  });

  test('the config\'s `distro: acme` picks it too; an unknown distro lists acme among the known ones', async () => {
    const s = site('acme');
    const r = await cli(['plan', 'bootstrap', '--order-only'], s.dir);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /acme-motd/);
    const bad = await cli(['plan', 'bootstrap', '--order-only', '--distro', 'acne'], s.dir);
    assert.equal(bad.code, 2, bad.stdout + bad.stderr);
    assert.match(bad.stderr, /known: acme, debian, kubic/);
  });

  test('a site distro directory others could write is refused (exit 2, untrusted-file) before its overrides run', async () => {
    const s = site();
    chmodSync(join(s.dir, 'distros', 'acme'), 0o777);
    for (const argv of [['plan', 'bootstrap', '--order-only', '--distro', 'acme'], ['plan', 'bootstrap', '--distro', 'acme']]) {
      const r = await cli(argv, s.dir);
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.match(r.stderr, /error untrusted-file: distro (overrides|settings) file .*distros\/acme\//);
      assert.equal(s.ranOverrides(), false, 'the overrides ran');
    }
  });
});
