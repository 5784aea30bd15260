/**
 * The control-plane certificate hand-over (kubeadm's `upload-certs` / `--certificate-key`): the
 * cluster's shared keys — cluster CA, service-account key pair, front-proxy CA, etcd CA — stored in
 * the Secret `kube-system/kubeception-certs`, each file encrypted with AES-256-GCM under a 32-byte
 * certificate key that only the operator holds (printed once by `kubeception certs upload`).
 *
 * - Each value is `nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)`, base64 in the Secret's `data`.
 * - The additional authenticated data binds the file name and the expiry instant: a value moved to
 *   another key, or an expiry annotation pushed later, fails authentication like a wrong key.
 * - The Secret expires at most 2 h after the upload (annotation `kubeception.io/expires`, checked
 *   before decrypting), and is owned by a bootstrap-token Secret that expires then: the token cleaner
 *   deletes the token and the garbage collector the certificates (kubeadm's TTL proxy token).
 * - Joining nodes read it with their bootstrap token (Role `kubeception:control-plane-certs`, get on
 *   this one Secret, for the token group) over the apiserver whose CA discovery pinned — so it is
 *   fetched only after the token and CA checks.
 * @see kubernetes/cmd/kubeadm/app/phases/copycerts/copycerts.go
 */
import { randomBytes } from 'node:crypto';
import { seal, SEAL_OVERHEAD, unseal } from '../util/seal.ts';
import { BOOTSTRAP_TOKEN_GROUP } from '../constants.ts';
import { InputError } from '../errors.ts';

/** Name of the Secret in kube-system. */
export const CERTS_SECRET = 'kubeception-certs';
/** Annotation with the expiry instant (RFC 3339). */
export const EXPIRES_ANNOTATION = 'kubeception.io/expires';
/** Annotation with the etcd members' client URLs at upload time (public): where a joining node first asks for the member list. */
export const ETCD_CLIENT_URLS_ANNOTATION = 'kubeception.io/etcd-client-urls';
/** The longest a certificate key is accepted after its upload (kubeadm's 2 h). */
export const MAX_CERTIFICATE_KEY_TTL_MS = 2 * 3_600_000;
/** The Role (and RoleBinding) letting bootstrap tokens read the Secret. */
export const CERTS_ROLE = 'kubeception:control-plane-certs';

/** The files handed over, relative to `certificatesDir`, and their Secret keys (kubeadm's list). */
export const SHARED_FILES = [
  ['ca.crt', 'ca.crt'], ['ca.key', 'ca.key'],
  ['sa.key', 'sa.key'], ['sa.pub', 'sa.pub'],
  ['front-proxy-ca.crt', 'front-proxy-ca.crt'], ['front-proxy-ca.key', 'front-proxy-ca.key'],
  ['etcd/ca.crt', 'etcd-ca.crt'], ['etcd/ca.key', 'etcd-ca.key'],
] as const;

/**
 * Files handed over when this node has them, relative to `certificatesDir`, and their Secret keys:
 * the encryption config of Secrets (its key; absent when `apiServer.secretsEncryption` was never on).
 * A joining apiserver without it could not read the cluster's Secrets.
 */
export const OPTIONAL_SHARED_FILES = [['encryption-config.yaml', 'encryption-config.yaml']] as const;

export const CERTIFICATE_KEY_RE = /^[0-9a-f]{64}$/;

/** A new random certificate key: 64 hex digits (32 bytes). Never log it. */
export const generateCertificateKey = () => randomBytes(32).toString('hex');

const aad = (name: string, expires: string) => Buffer.from(`kubeception-certs/v1\0${name}\0${expires}`);

/**
 * Encrypts `files` (Secret key → bytes) for `expires`.
 * @returns Secret `data` (base64 values).
 */
export function encryptFiles(key: string, files: Record<string, Uint8Array>, expires: string): Record<string, string> {
  const k = Buffer.from(key, 'hex');
  const out: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(files)) out[name] = seal(k, bytes, aad(name, expires)).toString('base64');
  return out;
}

const fix = 'on a control-plane node run `kubeception certs upload` and pass the certificate key it prints (within its 2 h)';

/** The error for a Secret that is gone or past its expiry. */
export function certificateKeyExpired(why: string): InputError {
  return new InputError('certificate-key-expired', { what: `Secret kube-system/${CERTS_SECRET}`, why: `the uploaded certificates have expired (${why})`, fix });
}

/**
 * Decrypts the Secret's `data` with `key`, after checking `expires` against `now`.
 * @returns Secret key → bytes, for every entry of {@link SHARED_FILES} and each {@link OPTIONAL_SHARED_FILES} entry the Secret has.
 * @throws InputError `certificate-key-expired` (past the expiry), `certificate-key` (the key does not
 *   decrypt: wrong key, or the Secret was altered), `certificate-key-bundle` (a file is missing).
 */
export function decryptFiles(key: string, data: Record<string, string>, expires: string | undefined, now = new Date()): Record<string, Buffer> {
  const at = expires === undefined ? Number.NaN : Date.parse(expires);
  if (Number.isNaN(at)) throw certificateKeyExpired(`no valid ${EXPIRES_ANNOTATION} annotation`);
  if (at <= now.getTime()) throw certificateKeyExpired(`expired at ${expires}`);
  const k = Buffer.from(key, 'hex');
  const out: Record<string, Buffer> = {};
  const optional = OPTIONAL_SHARED_FILES.map(([, name]) => name).filter((name) => data[name] !== undefined);
  for (const name of [...SHARED_FILES.map(([, n]) => n), ...optional]) {
    const raw = data[name] === undefined ? undefined : Buffer.from(data[name]!, 'base64');
    if (!raw || raw.length < SEAL_OVERHEAD)
      throw new InputError('certificate-key-bundle', { what: `Secret kube-system/${CERTS_SECRET} key ${name}`, why: 'missing or truncated', fix });
    const plain = unseal(k, raw, aad(name, expires!));
    if (!plain)
      throw new InputError('certificate-key', {
        what: '--certificate-key',
        why: `it does not decrypt the uploaded certificates (${name}): a wrong key, or a key of an earlier upload`,
        fix,
      });
    out[name] = plain;
  }
  return out;
}

/** The Role and RoleBinding: bootstrap tokens may `get` this one Secret (kubeadm's `kubeadm:bootstrap-signer-clusterinfo`-style grant). */
export function certsRbac() {
  const labels = { 'app.kubernetes.io/managed-by': 'kubeception' };
  return [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: CERTS_ROLE, namespace: 'kube-system', labels }, rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: [CERTS_SECRET], verbs: ['get'] }] },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: CERTS_ROLE, namespace: 'kube-system', labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: CERTS_ROLE },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: BOOTSTRAP_TOKEN_GROUP }],
    },
  ];
}
