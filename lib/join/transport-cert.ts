/**
 * The join service's serving certificate: transport only. Issued by a throw-away
 * `kubeception-join-transport` CA whose key is discarded at once, never by the cluster CA, so the
 * certificate (and the key the join pod holds) is worthless as an apiserver's: a worker's kubelet,
 * which trusts only the cluster CA, refuses it. Workers do not verify it either: discovery's
 * authenticity comes from the token signature and the CA pin.
 */
import { createCaCert, createSignedCert, isSignedBy, parseCert } from '../pki/forge.ts';
import { generatePrivateKey, loadPrivateKey } from '../pki/keys.ts';

const VALIDITY_DAYS = 365;
const RENEW_BEFORE_MS = 30 * 86_400_000;

/**
 * The existing pair if it is readable, not from the cluster CA and valid for 30 more days; else a new one.
 * @returns the pair and whether it is new.
 */
export async function reconcileTransportCert(existing: { certPem?: string; keyPem?: string }, clusterCaPem: string, now = new Date()): Promise<{ certPem: string; keyPem: string; created: boolean }> {
  if (existing.certPem && existing.keyPem) {
    try {
      const info = parseCert(existing.certPem, 'kubeception-join.crt');
      if (!isSignedBy(existing.certPem, clusterCaPem) && info.notAfter.getTime() - now.getTime() > RENEW_BEFORE_MS)
        return { certPem: existing.certPem, keyPem: existing.keyPem, created: false };
    } catch {
      /* unreadable: replaced below */
    }
  }
  const [caKeyPem, keyPem] = await Promise.all([generatePrivateKey('RSA-2048'), generatePrivateKey('RSA-2048')]);
  const caKey = loadPrivateKey(caKeyPem, 'join transport CA key');
  const caPem = createCaCert({ commonName: 'kubeception-join-transport', validityDays: VALIDITY_DAYS, now }, caKey, 'join transport CA');
  const certPem = createSignedCert({ commonName: 'kubeception-join', usages: ['serverAuth'], dnsNames: ['kubeception-join.kube-system.svc'], validityDays: VALIDITY_DAYS, now }, loadPrivateKey(keyPem, 'join transport key'), { certPem: caPem, key: caKey }, 'join transport certificate');
  return { certPem, keyPem, created: true };
}
