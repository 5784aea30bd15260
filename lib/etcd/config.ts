/**
 * etcd's configuration as the environment file the distro's unit reads (`ETCD_*` variables, which
 * etcd maps to its flags). One member, TLS with client-cert auth on client and peer ports, as
 * kubeadm's local etcd.
 * @see https://etcd.io/docs/v3.4/op-guide/configuration/
 */
import { join } from 'node:path';
import { ETCD_CLIENT_PORT, ETCD_PEER_PORT } from '../constants.ts';
import { url } from '../net/cidr.ts';
import type { ResolvedConfig } from '../types.ts';

/** Paths of the etcd certificates under `certificatesDir` (kubeadm's names). */
export function etcdPki(config: ResolvedConfig) {
  const d = join(config.certificatesDir, 'etcd');
  return {
    ca: join(d, 'ca.crt'),
    serverCert: join(d, 'server.crt'),
    serverKey: join(d, 'server.key'),
    peerCert: join(d, 'peer.crt'),
    peerKey: join(d, 'peer.key'),
    healthcheckCert: join(d, 'healthcheck-client.crt'),
    healthcheckKey: join(d, 'healthcheck-client.key'),
  };
}

/**
 * Where systemd hands the etcd unit its private keys (`LoadCredential=`, systemd ≥ 247): every file
 * under `certificatesDir` stays root:root 0600 (CIS 1.1.19) and the etcd user reads only the copies
 * systemd places in the unit's credentials directory (a private, read-only ramfs mount of the running
 * unit, gone when it stops).
 * @see https://systemd.io/CREDENTIALS/
 */
export function etcdCredentials(config: ResolvedConfig) {
  const dir = join('/run/credentials', config.distro.units.etcd);
  const pki = etcdPki(config);
  return {
    serverKey: { id: 'etcd-server.key', source: pki.serverKey, path: join(dir, 'etcd-server.key') },
    peerKey: { id: 'etcd-peer.key', source: pki.peerKey, path: join(dir, 'etcd-peer.key') },
  };
}

/** The etcd unit's drop-in kubeception writes: `<systemdDir>/<etcd unit>.d/20-kubeception.conf`. */
export const etcdDropIn = (config: ResolvedConfig) => join(config.distro.paths.systemdDir, `${config.distro.units.etcd}.d`, '20-kubeception.conf');

/**
 * The drop-in text: one `LoadCredential=` per etcd private key (see {@link etcdCredentials}).
 * Deterministic, so a re-run writes nothing.
 */
export function renderEtcdDropIn(config: ResolvedConfig): string {
  const creds = Object.values(etcdCredentials(config)).map((c) => `LoadCredential=${c.id}:${c.source}`);
  return [`${ETCD_ENV_HEADER}; re-running bootstrap rewrites this file.`, '[Service]', ...creds, ''].join('\n');
}

/** Client URLs of the local member: loopback first, then the advertise address. */
export function etcdClientUrls(config: ResolvedConfig): string[] {
  return [url('https', '127.0.0.1', ETCD_CLIENT_PORT), url('https', config.localAPIEndpoint.advertiseAddress, ETCD_CLIENT_PORT)];
}

/** First line of every etcd environment file kubeception writes: what marks the file as ours. */
export const ETCD_ENV_HEADER = '# Written by kubeception';

/** This member's peer URL: `https://<advertiseAddress>:2380`. */
export const etcdPeerUrl = (config: ResolvedConfig) => url('https', config.localAPIEndpoint.advertiseAddress, ETCD_PEER_PORT);

/** The value of `ETCD_<NAME>` in an environment file this module rendered, or undefined. */
export function readEtcdEnvironment(text: string, flag: string): string | undefined {
  const m = new RegExp(`^${envName(flag)}="((?:[^"\\\\]|\\\\.)*)"$`, 'm').exec(text);
  return m ? m[1]!.replace(/\\(.)/g, '$1') : undefined;
}

/** `listen-client-urls` → `ETCD_LISTEN_CLIENT_URLS`. */
const envName = (flag: string) => `ETCD_${flag.toUpperCase().replace(/-/g, '_')}`;

/** How this member joins: a new one-member cluster (bootstrap), or an existing cluster (control-plane join). */
export interface EtcdMembership {
  /** `name=peerURL,…` of every member, this one included. */
  initialCluster: string;
  initialClusterState: 'new' | 'existing';
}

/**
 * The environment file text. Deterministic: the same config renders byte-identical text, so a
 * re-run writes nothing.
 * @param membership default: a new cluster of this member alone.
 */
export function renderEtcdEnvironment(config: ResolvedConfig, membership?: EtcdMembership): string {
  const adv = config.localAPIEndpoint.advertiseAddress;
  const pki = etcdPki(config);
  const creds = etcdCredentials(config);
  const peer = url('https', adv, ETCD_PEER_PORT);
  const flags: Record<string, string> = {
    name: config.nodeName,
    'data-dir': config.etcd.dataDir,
    'listen-client-urls': etcdClientUrls(config).join(','),
    'advertise-client-urls': url('https', adv, ETCD_CLIENT_PORT),
    'listen-peer-urls': peer,
    'initial-advertise-peer-urls': peer,
    'initial-cluster': membership?.initialCluster ?? `${config.nodeName}=${peer}`,
    'initial-cluster-state': membership?.initialClusterState ?? 'new',
    'initial-cluster-token': 'kubeception',
    'listen-metrics-urls': url('http', '127.0.0.1', 2381),
    'client-cert-auth': 'true',
    'trusted-ca-file': pki.ca,
    'cert-file': pki.serverCert,
    'key-file': creds.serverKey.path,
    'peer-client-cert-auth': 'true',
    'peer-trusted-ca-file': pki.ca,
    'peer-cert-file': pki.peerCert,
    'peer-key-file': creds.peerKey.path,
    'snapshot-count': '10000',
    logger: 'zap',
    ...config.etcd.extraArgs,
  };
  const lines = Object.entries(flags).map(([k, v]) => `${envName(k)}="${v.replace(/(["\\$`])/g, '\\$1')}"`);
  return `${ETCD_ENV_HEADER}; re-running bootstrap rewrites this file.\n${lines.join('\n')}\n`;
}
