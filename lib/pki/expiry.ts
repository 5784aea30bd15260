/**
 * Every certificate kubeception issued on this host, where it lives, and when it expires — what
 * `kubeception certs check-expiration` prints (kubeadm's two tables). Sources: the PKI files of the
 * certificate table, the kubeconfigs (admin, controller-manager, scheduler, their bootstrap twins,
 * the kubelet's — inline or the rotating file it names), the join service's serving certificate,
 * the kubelet's serving certificate, and — when the API answers — the join service's TLS Secret
 * (the self-hosted control plane reads the host's files, listed above). Read-only; uses `anyCertFacts` (node:crypto) only.
 * @see kubernetes/cmd/kubeadm/app/cmd/certs.go (newCmdCertsExpiration)
 */
import { join } from 'node:path';
import { certSpecs } from './certs.ts';
import { anyCertFacts } from './any-cert.ts';
import { parseKubeconfig } from '../k8s/kubeconfig.ts';
import { kubeconfigPaths } from '../k8s/endpoints.ts';
import type { Cluster } from '../k8s/client.ts';
import type { HostFiles } from '../host/files.ts';
import type { ResolvedConfig } from '../types.ts';

/** One row: a certificate (or a CA) and its expiry. */
export interface ExpiryEntry {
  /** kubeadm's display name (`apiserver`, `etcd-server`, `admin.conf`), or `secret/<name>:<key>`. */
  name: string;
  /** Where it was read: a path, or `Secret kube-system/<name>`. */
  source: string;
  notAfter?: Date;
  /** Name of the CA that signed it (`ca`, `etcd-ca`, …), or the issuer's CN for a foreign issuer. */
  authority: string;
  /** True when its CA's key is not on this host (kubeadm's EXTERNALLY MANAGED). */
  externallyManaged: boolean;
  /** The file or key is absent. */
  missing: boolean;
}

/** The inventory: leaves, then CAs. */
export interface ExpiryReport {
  certificates: ExpiryEntry[];
  authorities: ExpiryEntry[];
}

const display = (name: string) => (name === 'etcd/ca' ? 'etcd-ca' : name.replace('/', '-'));

/** Parses `pem` into an entry; an unreadable PEM counts as missing. */
function entry(name: string, source: string, pem: string | undefined, cas: Map<string, { name: string; keyed: boolean }>): ExpiryEntry {
  if (!pem?.includes('-----BEGIN CERTIFICATE')) return { name, source, authority: '', externallyManaged: false, missing: true };
  try {
    const info = anyCertFacts(pem, source);
    const ca = cas.get(info.issuerCommonName);
    return { name, source, notAfter: info.notAfter, authority: ca?.name ?? info.issuerCommonName, externallyManaged: ca ? !ca.keyed : false, missing: false };
  } catch {
    return { name, source, authority: '', externallyManaged: false, missing: true };
  }
}

/** Host files: PKI, kubeconfigs, join service, kubelet. */
async function hostEntries(config: ResolvedConfig, files: HostFiles): Promise<ExpiryReport> {
  const specs = certSpecs(config);
  const cas = new Map<string, { name: string; keyed: boolean }>();
  const authorities: ExpiryEntry[] = [];
  for (const s of specs.filter((x) => x.kind === 'ca')) {
    const pem = await files.read(s.certPath);
    const keyed = await files.exists(s.keyPath);
    const e = entry(display(s.name), s.certPath, pem, cas);
    if (pem) cas.set(anyCertFacts(pem, s.certPath).commonName, { name: display(s.name), keyed });
    authorities.push({ ...e, authority: '', externallyManaged: !keyed });
  }
  const certificates: ExpiryEntry[] = [];
  for (const s of specs.filter((x) => x.kind === 'leaf')) certificates.push(entry(display(s.name), s.certPath, await files.read(s.certPath), cas));
  const joinCert = join(config.certificatesDir, 'kubeception-join.crt');
  if (await files.exists(joinCert)) certificates.push(entry('kubeception-join', joinCert, await files.read(joinCert), cas));
  const p = kubeconfigPaths(config);
  const confs: [string, string][] = [['admin.conf', p.admin], ['controller-manager.conf', p.controllerManager], ['scheduler.conf', p.scheduler], ['bootstrap-admin.conf', p.bootstrapAdmin], ['bootstrap-controller-manager.conf', p.bootstrapControllerManager], ['bootstrap-scheduler.conf', p.bootstrapScheduler], ['kubelet.conf', p.kubelet]];
  for (const [name, path] of confs) {
    const text = await files.read(path);
    if (text === undefined) continue;
    const k = parseKubeconfig(text, path);
    const pem = k.certPem ?? (k.certFile ? await files.read(k.certFile) : undefined);
    certificates.push(entry(name, k.certFile ?? path, pem, cas));
  }
  // The kubelet's serving certificate: from its certificate store (`kubelet-server-current.pem`, the
  // certificate then its key; only the certificate is read) with serverTLSBootstrap, else self-signed.
  for (const name of ['kubelet-server-current.pem', 'kubelet.crt']) {
    const serving = join(config.distro.paths.kubeletConfigDir, 'pki', name);
    if (!(await files.exists(serving))) continue;
    certificates.push(entry('kubelet-serving', serving, await files.read(serving), cas));
    break;
  }
  return { certificates, authorities };
}

/** The join service's TLS Secret (the only certificate kubeception keeps in the API): every certificate in it, by key. */
async function secretEntries(api: Cluster, cas: Map<string, { name: string; keyed: boolean }>): Promise<ExpiryEntry[]> {
  const out: ExpiryEntry[] = [];
  for (const name of ['kubeception-join-tls']) {
    const s = await api.read<{ data?: Record<string, string> } & import('../k8s/client.ts').KubernetesObject>({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'kube-system' } });
    for (const [key, b64] of Object.entries(s?.data ?? {}).sort()) {
      const text = Buffer.from(b64, 'base64').toString('utf8');
      const source = `Secret kube-system/${name}`;
      if (key === 'kubeconfig') out.push(entry(`secret/${name}:kubeconfig`, source, parseKubeconfig(text, source).certPem, cas));
      else if ((key.endsWith('.crt') && !key.includes('ca.crt')) || key === 'tls.crt') out.push(entry(`secret/${name}:${key}`, source, text, cas));
    }
  }
  return out;
}

/**
 * The inventory of this host (and the cluster's Secrets when `api` is given and answers).
 * @returns leaves then CAs, in table order; Secrets after host files. Never throws for a missing
 *   or unreadable certificate (it is listed `missing`); throws only what `api` throws.
 */
export async function expiryReport(config: ResolvedConfig, files: HostFiles, api?: Cluster): Promise<ExpiryReport> {
  const host = await hostEntries(config, files);
  if (!api) return host;
  const cas = new Map<string, { name: string; keyed: boolean }>();
  for (const a of host.authorities) {
    const pem = await files.read(a.source);
    if (pem) cas.set(anyCertFacts(pem, a.source).commonName, { name: a.name, keyed: !a.externallyManaged });
  }
  return { certificates: [...host.certificates, ...(await secretEntries(api, cas))], authorities: host.authorities };
}
