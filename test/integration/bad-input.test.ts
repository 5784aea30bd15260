/**
 * Bad input on a real host: every case exits 2 with a message naming the field or file, saying why
 * and how to fix it — and the host's file tree is unchanged (found before the first host write).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootHost, type Host } from '../bed/bed.ts';
import { assertSameTree, kc, snapshot, SITE, writeConfig } from '../helpers/bed-cli.ts';

type Case = { name: string; config?: unknown; raw?: string; args?: string[]; setup?: string; want: RegExp[] };

const cases: Case[] = [
  { name: 'nodeName with an underscore', config: { nodeName: 'node_a' }, want: [/nodeName/, /DNS-1123/, /fix: set nodeName to .*"node-a"/] },
  { name: 'pod and service subnets overlap', config: { networking: { podSubnet: '10.0.0.0/8', serviceSubnet: '10.96.0.0/12' } }, want: [/networking\.podSubnet, networking\.serviceSubnet/, /10\.0\.0\.0\/8 and serviceSubnet 10\.96\.0\.0\/12 overlap/] },
  { name: 'pod subnet overlaps the host network', config: { networking: { podSubnet: '10.250.0.0/16' } }, want: [/networking\.podSubnet/, /host network 10\.250\./] },
  { name: 'service subnet has host bits set', config: { networking: { serviceSubnet: '10.96.0.1/12' } }, want: [/serviceSubnet/, /host bits/] },
  { name: 'advertise address not on this host', config: { localAPIEndpoint: { advertiseAddress: '10.250.77.77' } }, want: [/localAPIEndpoint\.advertiseAddress/, /not assigned/] },
  { name: 'advertise address is a name', config: { localAPIEndpoint: { advertiseAddress: 'master.example' } }, want: [/advertiseAddress/, /not an IP/] },
  { name: 'bindPort of the wrong type', config: { localAPIEndpoint: { bindPort: '6443' } }, want: [/localAPIEndpoint\.bindPort/, /expected number/] },
  { name: 'bootstrap and final apiserver on one port', config: { bootstrapAPIEndpoint: { bindPort: 6443 } }, want: [/bootstrapAPIEndpoint\.bindPort/, /coexist/] },
  { name: 'unknown config key', config: { networking: { podCIDR: '10.244.0.0/16' } }, want: [/networking/, /podCIDR/] },
  { name: 'unknown distro', config: { distro: 'gentoo' }, want: [/distro "gentoo"/, /known: debian, kubic/] },
  { name: 'key algorithm kubeadm does not offer', config: { encryptionAlgorithm: 'ECDSA-P521' }, want: [/encryptionAlgorithm/, /ECDSA-P256/] },
  { name: 'extra SAN that is no name', config: { apiServer: { extraSANs: ['api server'] } }, want: [/apiServer\.extraSANs\[0\]/] },
  { name: 'config file missing', config: {}, args: ['--config', '/root/nope.ts'], want: [/--config \/root\/nope\.ts/, /does not exist/] },
  { name: 'config with a syntax error', raw: 'export default { distro: "debian", ', want: [/config-load/, /kubeception\.config\.ts/] },
  { name: 'config without a default export', raw: 'export const config = {};\n', want: [/no default export/] },
  { name: 'unknown step in --skip', config: {}, args: ['--skip', 'etcdd'], want: [/no step "etcdd"/] },
  { name: 'unknown flag', config: {}, args: ['--nodename', 'x'], want: [/unknown flag --nodename/] },
  { name: 'empty --only (e.g. an unset variable)', config: {}, args: ['--only', ''], want: [/--only needs a comma-separated list/] },
  { name: 'certificatesDir is /', config: { certificatesDir: '/' }, want: [/certificatesDir/, /system directory/] },
  { name: 'bindPort taken by etcd', config: { localAPIEndpoint: { bindPort: 2379 } }, want: [/localAPIEndpoint\.bindPort/, /used by etcd/] },
  { name: 'foreign etcd environment file', config: {}, setup: 'printf "ETCD_NAME=other\\n" > /etc/default/etcd', want: [/FileAvailable--etc-default-etcd/, /ETCD_NAME/] },
  { name: 'CA certificate without its key', config: {}, setup: 'mkdir -p /etc/kubernetes/pki && openssl req -x509 -newkey rsa:2048 -nodes -keyout /root/orphan.key -out /etc/kubernetes/pki/ca.crt -days 1 -subj /CN=kubernetes 2>/dev/null', want: [/\[Certificates\]/, /ca\.key is missing/, /never replaces a CA/] },
];

describe('bad input: exit 2, named field, host unchanged', { timeout: 600_000 }, () => {
  let host: Host;
  before(async () => {
    host = await bootHost({ name: 'badin', hostname: 'Node-A' });
  });
  after(async () => host?.destroy());

  for (const c of cases)
    test(c.name, async () => {
      if (c.setup) await host.execOk(['bash', '-c', c.setup]);
      if (c.raw !== undefined) await host.writeFile(`${SITE}/kubeception.config.ts`, c.raw);
      else await writeConfig(host, { distro: 'debian', ...(c.config as object) });
      const before = await snapshot(host);
      const r = await kc(host, ['run', 'bootstrap', ...(c.args ?? [])]);
      assert.equal(r.code, 2, `exit code\n${r.stdout}\n${r.stderr}`);
      for (const w of c.want) assert.match(r.stderr, w);
      assert.match(r.stderr, /fix: /);
      assertSameTree(before, await snapshot(host), c.name);
      if (c.setup) await host.execOk(['bash', '-c', 'rm -rf /etc/kubernetes /etc/default/etcd.tmp; cp /usr/share/doc/etcd-server/examples/etcd.default /etc/default/etcd 2>/dev/null || printf "# default\\n" > /etc/default/etcd']);
    });

  test('dry-run writes nothing (file-tree snapshot)', async () => {
    await writeConfig(host, { distro: 'debian' });
    const before = await snapshot(host);
    const r = await kc(host, ['run', 'bootstrap', '--dry-run']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /1\. preflight/);
    assertSameTree(before, await snapshot(host), 'dry-run');
  });
});
