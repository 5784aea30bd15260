/**
 * A real kube-apiserver with a real etcd, both on 127.0.0.1 in this process's network namespace, for
 * integration tests of code that only talks to the API (the CSR approver, token commands): no bed
 * host, no kubelet. etcd is the machine's (Debian's), plain HTTP on loopback; the apiserver is the
 * bed's build (`$KUBECEPTION_CACHE/k8s/<K8S_VERSION>/bin/kube-apiserver`) with a throw-away PKI,
 * `--authorization-mode=Node,RBAC`, bootstrap token authentication, NodeRestriction and
 * `--allow-privileged=true` (privileged pods, e.g. the node upgrade agent's Job), as a
 * kubeception control plane runs it. Both are started as child processes of this one and killed by
 * their PIDs on `stop()`; their directory (a mkdtemp under /tmp) is removed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { createCaCert, createSignedCert } from '../../lib/pki/x509.ts';
import { generatePrivateKey, loadPrivateKey, publicKeyPem } from '../../lib/pki/keys.ts';
import { renderKubeconfig } from '../../lib/k8s/kubeconfig.ts';
import { CACHE_DIR, K8S_VERSION } from './bed.ts';

export interface LoopbackApiserver {
  /** `https://127.0.0.1:<port>`. */
  url: string;
  caPem: string;
  /** A kubeconfig (text) of a `system:masters` user. */
  adminKubeconfig: string;
  /** A kubeconfig (text) for `user` in `groups`, signed by the cluster CA. */
  clientKubeconfig(user: string, groups?: string[]): Promise<string>;
  /** A kubeconfig (text) with a bearer token (a bootstrap token, a ServiceAccount token). */
  tokenKubeconfig(token: string): string;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function readyz(url: string, caPem: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(`${url}/readyz`, { ca: caPem, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** Starts etcd and kube-apiserver; resolves once `/readyz` answers 200 (≤ 90 s). */
export async function startLoopbackApiserver(): Promise<LoopbackApiserver> {
  const dir = mkdtempSync('/tmp/kc-loopback-apiserver-');
  const children: ChildProcess[] = [];
  const logs: string[] = [];
  const start = (argv: string[]) => {
    const c = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    c.stderr?.on('data', (b: Buffer) => logs.push(b.toString()) > 200 && logs.shift());
    children.push(c);
    return c;
  };
  const stop = async () => {
    for (const c of children.reverse()) if (c.exitCode === null && c.pid) c.kill('SIGKILL');
    await sleep(100);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const caKey = await generatePrivateKey('ECDSA-P256');
    const ca = { certPem: await createCaCert({ commonName: 'kubernetes', validityDays: 1 }, loadPrivateKey(caKey, 'ca'), 'ca'), key: loadPrivateKey(caKey, 'ca') };
    const leaf = async (commonName: string, usages: ('serverAuth' | 'clientAuth')[], organizations: string[] = []) => {
      const keyPem = await generatePrivateKey('ECDSA-P256');
      const certPem = await createSignedCert({ commonName, organizations, usages, ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'], validityDays: 1 }, loadPrivateKey(keyPem, commonName), ca, commonName);
      return { certPem, keyPem };
    };
    const serving = await leaf('kube-apiserver', ['serverAuth']);
    const admin = await leaf('kubernetes-admin', ['clientAuth'], ['system:masters']);
    const saKey = await generatePrivateKey('RSA-2048');
    const files = { 'ca.crt': ca.certPem, 'apiserver.crt': serving.certPem, 'apiserver.key': serving.keyPem, 'sa.key': saKey, 'sa.pub': publicKeyPem(loadPrivateKey(saKey, 'sa')) };
    for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text, { mode: 0o600 });
    const [etcdClient, etcdPeer, port] = await Promise.all([freePort(), freePort(), freePort()]);
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    start(['etcd', '--data-dir', join(dir, 'etcd'), '--listen-client-urls', etcdUrl, '--advertise-client-urls', etcdUrl,
      '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster', `default=http://127.0.0.1:${etcdPeer}`, '--logger', 'zap']);
    const p = (f: string) => join(dir, f);
    start([join(CACHE_DIR, 'k8s', K8S_VERSION, 'bin', 'kube-apiserver'), `--etcd-servers=${etcdUrl}`, `--secure-port=${port}`, '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1', `--tls-cert-file=${p('apiserver.crt')}`, `--tls-private-key-file=${p('apiserver.key')}`, `--client-ca-file=${p('ca.crt')}`,
      `--service-account-key-file=${p('sa.pub')}`, `--service-account-signing-key-file=${p('sa.key')}`, '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      '--endpoint-reconciler-type=none', '--authorization-mode=Node,RBAC', '--enable-bootstrap-token-auth=true', '--enable-admission-plugins=NodeRestriction', '--service-cluster-ip-range=10.96.0.0/12', '--allow-privileged=true',
      `--cert-dir=${p('certs')}`]);
    const url = `https://127.0.0.1:${port}`;
    const deadline = Date.now() + 90_000;
    while ((await readyz(url, ca.certPem)) !== 200) {
      if (Date.now() > deadline || children.some((c) => c.exitCode !== null)) throw new Error(`loopback apiserver did not become ready:\n${logs.join('').slice(-3000)}`);
      await sleep(300);
    }
    return {
      url,
      caPem: ca.certPem,
      adminKubeconfig: renderKubeconfig({ server: url, caPem: ca.certPem, user: 'kubernetes-admin', certPem: admin.certPem, keyPem: admin.keyPem }),
      async clientKubeconfig(user, groups = []) {
        const c = await leaf(user, ['clientAuth'], groups);
        return renderKubeconfig({ server: url, caPem: ca.certPem, user, certPem: c.certPem, keyPem: c.keyPem });
      },
      tokenKubeconfig: (token) => renderKubeconfig({ server: url, caPem: ca.certPem, user: 'token-user', token }),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
