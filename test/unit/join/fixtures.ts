/** Certificates for the join unit tests: a "cluster" CA and an impostor CA, each with a serving leaf. */
import { createCaCert, createSignedCert } from '../../../lib/pki/forge.ts';
import { generatePrivateKey, loadPrivateKey } from '../../../lib/pki/keys.ts';

export interface Pair {
  certPem: string;
  keyPem: string;
}

export async function makeCa(cn: string): Promise<Pair> {
  const keyPem = await generatePrivateKey('RSA-2048');
  return { keyPem, certPem: createCaCert({ commonName: cn, validityDays: 1 }, loadPrivateKey(keyPem, cn), cn) };
}

export async function makeLeaf(ca: Pair, cn: string): Promise<Pair> {
  const keyPem = await generatePrivateKey('RSA-2048');
  const certPem = createSignedCert({ commonName: cn, ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'], usages: ['serverAuth'], validityDays: 1 }, loadPrivateKey(keyPem, cn), { certPem: ca.certPem, key: loadPrivateKey(ca.keyPem, 'ca') }, cn);
  return { keyPem, certPem };
}
