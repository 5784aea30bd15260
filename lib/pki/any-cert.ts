/**
 * Reading a certificate of any key type (RSA, ECDSA, Ed25519) with `node:crypto`'s X509Certificate:
 * the kubelet rotates its client certificate with an ECDSA key of its choice, read here without loading
 * the ASN.1 libraries of lib/pki/x509.ts. Only the facts expiry checks and the kubelet kubeconfig step need.
 */
import { X509Certificate } from 'node:crypto';
import { PkiError } from './errors.ts';

/** What can be read from any certificate. */
export interface AnyCertFacts {
  commonName: string;
  issuerCommonName: string;
  notAfter: Date;
}

const cn = (dn: string) => /(?:^|\n)CN=([^\n]*)/.exec(dn)?.[1] ?? '';

/** @throws PkiError `pki-bad-cert` naming `source` if `pem` is not a certificate. */
export function anyCertFacts(pem: string, source: string): AnyCertFacts {
  try {
    const x = new X509Certificate(pem);
    return { commonName: cn(x.subject), issuerCommonName: cn(x.issuer), notAfter: new Date(x.validTo) };
  } catch (err) {
    throw new PkiError('pki-bad-cert', { what: source, why: `not a readable PEM X.509 certificate (${(err as Error).message})`, fix: `move ${source} aside to have it created`, cause: err });
  }
}
