/**
 * `kubeception etcd snapshot save|list|verify|delete` against a real etcd on bed hosts (systemd,
 * the Debian etcd unit running the bed's etcd 3.6 with etcdutl, and Debian's etcd 3.4 with etcdctl
 * only), run inside each host as an operator would: a verified bundle (0600 files in a 0700
 * directory, the key 0600 outside it, its bytes in no output), retention pruning, a truncated
 * snapshot refused by verify (exit 2, the file named, nothing changed), delete.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import type { RuntimeVariant } from '../bed/runtime.ts';
import { assertSameTree, kc, snapshot, writeConfig, type KcResult } from '../helpers/bed-cli.ts';

const PKI = '/etc/kubernetes/pki';
const DIR = '/var/lib/kubeception/snapshots';
const KEY = '/etc/kubeception/snapshot.key';
const UNTIL_ETCD = ['run', 'bootstrap', '--only', 'preflight,certs,kubeconfig,etcd', '--ignore-preflight-errors', 'FileExisting-kubelet,Service-kubelet,ImagePull', '--output', 'json'];
const KEYS = 25;

const etcdctl = (host: Host, ...args: string[]) =>
  host.execOk(['etcdctl', '--endpoints=https://127.0.0.1:2379', `--cacert=${PKI}/etcd/ca.crt`, `--cert=${PKI}/apiserver-etcd-client.crt`, `--key=${PKI}/apiserver-etcd-client.key`, ...args], { env: { ETCDCTL_API: '3' } });
const mode = async (host: Host, path: string) => (await host.execOk(['stat', '-c', '%a %U', path])).trim();

for (const variant of ['bed', 'debian'] as RuntimeVariant[])
  describe(`etcd snapshots with the ${variant} etcd`, { timeout: 600_000 }, () => {
    let host: Host;
    const outputs: KcResult[] = [];
    const run = async (...args: string[]) => {
      const r = await kc(host, ['etcd', 'snapshot', ...args]);
      outputs.push(r);
      return r;
    };
    let saved: any;
    before(async () => {
      host = await bootHost({ name: `snap-${variant}`, etcd: variant });
      await writeConfig(host, { distro: 'debian', etcd: { snapshots: { retention: 2 } } });
      const r = await kc(host, UNTIL_ETCD);
      assert.equal(r.code, 0, r.stderr);
      for (let i = 0; i < KEYS; i++) await etcdctl(host, 'put', `/snaptest/k${i}`, `v${i}`);
    });
    after(async () => host?.destroy());

    test('save: a bundle verified by a test restore, files 0600 in 0700 directories, the key 0600 outside', async () => {
      const r = await run('save', '--output', 'json');
      assert.equal(r.code, 0, r.stderr + r.stdout);
      saved = r.events.find((e) => e.event === 'snapshot-saved');
      assert.ok(saved, r.stdout);
      assert.equal(saved.keyCreated, true);
      const live = (await etcdctl(host, 'get', '', '--from-key', '--keys-only')).split('\n').filter(Boolean).length;
      assert.ok(live >= KEYS, `at least the ${KEYS} keys put, got ${live}`);
      assert.equal(saved.snapshot.verify.keyCount, live);
      assert.equal(saved.snapshot.verify.tool, variant === 'bed' ? 'etcdutl' : 'etcdctl');
      assert.equal(saved.snapshot.verify.revision, saved.snapshot.etcd.revision);
      assert.match(saved.snapshot.name, /^etcd-snapshot-snap-(bed|debian)-\d{8}T\d{6}Z$/);
      assert.match(r.stderr, /created the snapshot key \/etc\/kubeception\/snapshot\.key/);
      assert.equal(await mode(host, DIR), '700 root');
      assert.equal(await mode(host, saved.path), '700 root');
      for (const f of ['etcd.db', 'pki.enc', 'snapshot.json']) assert.equal(await mode(host, `${saved.path}/${f}`), '600 root', f);
      assert.equal(await mode(host, KEY), '600 root');
      assert.equal((await host.execOk(['sh', '-c', `ls -A ${DIR}`])).trim(), saved.snapshot.name, 'no .part or scratch directory left');
      const sha = (await host.execOk(['sha256sum', `${saved.path}/etcd.db`])).split(' ')[0];
      assert.equal(sha, saved.snapshot.parts.db.sha256);
      console.log(`[etcd-snapshot ${variant}] save ${saved.durationMs} ms (test restore ${saved.snapshot.verify.durationMs} ms), ${saved.snapshot.parts.db.bytes} B db, ${live} keys`);
    });

    test('list: the snapshot, text and JSON', async () => {
      const j = await run('list', '--output', 'json');
      assert.equal(j.code, 0, j.stderr);
      assert.deepEqual(j.events.map((e) => e.name), [saved.snapshot.name]);
      assert.equal(j.events[0].keyCount, saved.snapshot.verify.keyCount);
      const t = await run('list');
      assert.match(t.stdout, new RegExp(`^${saved.snapshot.name}\\s+\\S+Z\\s+[\\d.]+ [kM]?B\\s+${saved.snapshot.etcd.revision}\\s+${saved.snapshot.verify.keyCount}\\s`, 'm'));
    });

    test('verify: hashes, PKI and a test restore; the result recorded', async () => {
      const r = await run('verify', saved.snapshot.name, '--output', 'json');
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const v = r.events.find((e) => e.event === 'snapshot-verified');
      assert.equal(v.snapshot.verify.keyCount, saved.snapshot.verify.keyCount);
      assert.notEqual(v.snapshot.verify.at, saved.snapshot.verify.at);
      const meta = JSON.parse(await host.readFile(`${saved.path}/snapshot.json`));
      assert.equal(meta.verify.at, v.snapshot.verify.at);
      console.log(`[etcd-snapshot ${variant}] verify: test restore ${v.snapshot.verify.durationMs} ms`);
    });

    test('retention 2: a third save prunes the oldest of this node', async () => {
      const names = [saved.snapshot.name];
      for (let i = 0; i < 2; i++) {
        const r = await run('save', '--output', 'json');
        assert.equal(r.code, 0, r.stderr);
        const e = r.events.find((x) => x.event === 'snapshot-saved');
        assert.equal(e.keyCreated, false);
        names.push(e.snapshot.name);
        assert.deepEqual(e.pruned, i === 1 ? [names[0]] : []);
      }
      const l = await run('list', '--output', 'json');
      assert.deepEqual(l.events.map((e) => e.name), names.slice(1));
    });

    test('a truncated snapshot: verify refuses it (exit 2, the file named, why and fix), nothing on the host changes', async () => {
      const name = (await run('list', '--output', 'json')).events[0].name;
      const db = `${DIR}/${name}/etcd.db`;
      await host.execOk(['sh', '-c', `truncate -s -4096 ${db}`]);
      const before = await snapshot(host, [DIR, '/etc/kubeception', '/var/lib/etcd']);
      const r = await run('verify', name);
      assert.equal(r.code, 2, r.stderr + r.stdout);
      assert.match(r.stderr, new RegExp(`error snapshot-corrupt: ${db.replace(/[.]/g, '\\.')}`));
      assert.match(r.stderr, /why: it has \d+ bytes, \d+ were recorded: it is truncated/);
      assert.match(r.stderr, /fix: take a new snapshot/);
      assertSameTree(before, await snapshot(host, [DIR, '/etc/kubeception', '/var/lib/etcd']), 'verify of a truncated snapshot');
      // The recorded sha256 aside, etcd's own check refuses it too: make the metadata agree with the cut file.
      const meta = JSON.parse(await host.readFile(`${DIR}/${name}/snapshot.json`));
      const [sha, bytes] = (await host.execOk(['sh', '-c', `sha256sum < ${db} | cut -d' ' -f1; stat -c %s ${db}`])).trim().split('\n');
      await host.writeFile(`${DIR}/${name}/snapshot.json`, JSON.stringify({ ...meta, parts: { ...meta.parts, db: { sha256: sha, bytes: Number(bytes) } } }), 0o600);
      const r2 = await run('verify', name);
      assert.equal(r2.code, 2, r2.stderr + r2.stdout);
      assert.match(r2.stderr, /error snapshot-corrupt: .*etcd\.db\n {2}why: etcd(utl|ctl) snapshot restore refuses it/);
      assert.equal((await host.execOk(['sh', '-c', `ls -A ${DIR}`])).split('\n').filter(Boolean).length, 2, 'no scratch directory left');
    });

    test('delete: the bundle goes; an unknown name is refused (exit 2)', async () => {
      const name = (await run('list', '--output', 'json')).events[0].name;
      const r = await run('delete', name);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(await host.exists(`${DIR}/${name}`), false);
      const again = await run('delete', name);
      assert.equal(again.code, 2);
      assert.match(again.stderr, /error snapshot-unknown: .*there is no such snapshot/s);
      const bad = await run('verify', '../../etc');
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /not a snapshot name/);
      assert.equal((await run('list', '--output', 'json')).events.length, 1);
    });

    test('the key bytes appear in no output', async () => {
      const key = (await host.readFile(KEY)).trim();
      assert.match(key, /^[0-9a-f]{64}$/);
      assert.ok(outputs.length >= 10);
      for (const r of outputs) for (const part of [key, key.slice(0, 16), key.slice(-16)]) assert.ok(!(r.stdout + r.stderr).includes(part), 'key bytes in output');
    });
  });
