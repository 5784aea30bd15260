/**
 * kube-apiserver's EncryptionConfiguration for Secrets (encryption at rest, CIS 1.2.27/1.2.28): a
 * `secretbox` provider (XSalsa20-Poly1305) with a generated 32-byte key, then `identity`, so Secrets
 * written before encryption was turned on stay readable until they are rewritten. `secretbox`, not
 * `aesgcm` (upstream's docs: a static aesgcm key must be rotated every 200 000 writes) nor `aescbc`
 * (open to padding-oracle attacks): among the static-key providers the one the docs recommend, and one
 * kube-bench's 1.2.28 accepts.
 *
 * The file (`<certificatesDir>/encryption-config.yaml`, 0600) is the key: created once, kept on every
 * re-run, handed to further control-plane nodes with `certs upload` and kept in every etcd snapshot's
 * PKI part. Its text is never logged; only key *names* are ever shown. Pure: text in, data out.
 * @see https://kubernetes.io/docs/tasks/administer-cluster/encrypt-data/
 * @see k8s.io/apiserver/pkg/apis/apiserver/v1 (EncryptionConfiguration)
 */
import { randomBytes } from 'node:crypto';
import { HostStateError } from '../errors.ts';
import { fromYaml, toYaml } from '../util/yaml.ts';

/** File name under `certificatesDir`. */
export const ENCRYPTION_CONFIG_FILE = 'encryption-config.yaml';

/** Providers that encrypt with a key held in the file (kube-bench's 1.2.28 accepts aescbc, kms, secretbox). */
const KEY_PROVIDERS = ['secretbox', 'aescbc', 'aesgcm'] as const;
type KeyProvider = (typeof KEY_PROVIDERS)[number];

/** One provider of the Secrets' list: a key provider with its keys (name, base64 secret), or another kind by name. */
export type Provider = { kind: KeyProvider; keys: { name: string; secret: string }[] } | { kind: string; keys?: undefined };

/** The parsed configuration: the providers for `secrets`, in order (the first one writes). */
export interface EncryptionConfig {
  providers: Provider[];
}

/** A new key: `key-<n>` with 32 random bytes (base64). Never log `secret`. */
export function newKey(n = 1): { name: string; secret: string } {
  return { name: `key-${n}`, secret: randomBytes(32).toString('base64') };
}

/** A configuration with a new secretbox key, then identity (what bootstrap creates). */
export function generateEncryptionConfig(): EncryptionConfig {
  return { providers: [{ kind: 'secretbox', keys: [newKey(1)] }, { kind: 'identity' }] };
}

/** The file's text for `c` (apiserver.config.k8s.io/v1). */
export function renderEncryptionConfig(c: EncryptionConfig): string {
  const providers = c.providers.map((p) => (p.keys ? { [p.kind]: { keys: p.keys } } : { [p.kind]: {} }));
  return toYaml({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'EncryptionConfiguration', resources: [{ resources: ['secrets'], providers }] });
}

function invalid(file: string, why: string): HostStateError {
  return new HostStateError('encryption-config-invalid', {
    what: file,
    why: `${why}; the apiserver would not start with it, and Secrets encrypted with its key are readable only with that key`,
    fix: `restore ${file} from an etcd snapshot's PKI part or a backup (never delete it while Secrets are encrypted with it)`,
  });
}

/**
 * Parses the file's text. It must be an EncryptionConfiguration whose entry for `secrets` lists
 * providers, each key provider with named keys of 32 bytes (16, 24 or 32 for aescbc/aesgcm).
 * @param file the path, named in errors (the text never is).
 * @throws HostStateError `encryption-config-invalid` (exit 2).
 */
export function parseEncryptionConfig(text: string, file: string): EncryptionConfig {
  let doc: { kind?: unknown; resources?: { resources?: unknown; providers?: unknown }[] };
  try {
    doc = fromYaml(text, file) as typeof doc;
  } catch {
    throw invalid(file, 'it is not valid YAML');
  }
  if (doc?.kind !== 'EncryptionConfiguration' || !Array.isArray(doc.resources)) throw invalid(file, 'it is not an EncryptionConfiguration');
  const entry = doc.resources.find((r) => Array.isArray(r?.resources) && r.resources.includes('secrets'));
  if (!entry || !Array.isArray(entry.providers) || entry.providers.length === 0) throw invalid(file, 'it has no providers for secrets');
  const providers = entry.providers.map((raw: Record<string, { keys?: { name?: unknown; secret?: unknown }[] }>): Provider => {
    const [kind, body] = Object.entries(raw ?? {})[0] ?? [];
    if (!kind) throw invalid(file, 'a provider has no type');
    if (!(KEY_PROVIDERS as readonly string[]).includes(kind)) return { kind };
    const keys = (body?.keys ?? []).map((k) => ({ name: String(k?.name ?? ''), secret: String(k?.secret ?? '') }));
    if (keys.length === 0) throw invalid(file, `its ${kind} provider has no keys`);
    for (const k of keys) {
      const n = Buffer.from(k.secret, 'base64').length;
      if (!k.name || !(kind === 'secretbox' ? n === 32 : [16, 24, 32].includes(n))) throw invalid(file, `key "${k.name}" of its ${kind} provider is not a named ${kind === 'secretbox' ? '32' : '16/24/32'}-byte key`);
    }
    return { kind: kind as KeyProvider, keys };
  });
  return { providers };
}

/**
 * What new writes of Secrets use: `<provider>/<first key name>` (e.g. `secretbox/key-1`), or the
 * provider's type (`identity`: plain text). Names only, safe to show.
 */
export function writeProvider(c: EncryptionConfig): string {
  const first = c.providers[0]!;
  return first.keys ? `${first.kind}/${first.keys[0]!.name}` : first.kind;
}

/** The etcd value prefix of a Secret written by {@link writeProvider} `w` (`k8s:enc:secretbox:v1:key-1:`), undefined for plain text. */
export function storedPrefix(w: string): string | undefined {
  const [kind, key] = w.split('/');
  return key ? `k8s:enc:${kind}:v1:${key}:` : undefined;
}

/**
 * A step of `kubeception secrets rotate-key` (upstream's rotation of a static key): `add` the new key
 * second (every apiserver can then read it), `promote` it first (new writes use it), `rewrite` every
 * Secret with it, `drop` the old key. Each change of the file is followed by a roll of the
 * apiservers, so no apiserver ever meets a value it cannot decrypt.
 */
export type RotationPhase = 'add' | 'promote' | 'rewrite' | 'drop';

/** Why a file cannot be rotated by kubeception, or undefined. */
function unrotatable(c: EncryptionConfig): string | undefined {
  const first = c.providers[0]!;
  if (!first.keys) return `its first provider is ${first.kind}, not a key provider (secretbox, aescbc, aesgcm)`;
  if (first.keys.length > 2) return `its ${first.kind} provider has ${first.keys.length} keys (a rotation holds at most two)`;
  return undefined;
}

/**
 * The next phase of a rotation, from the file and the provider/key the Secrets were last rewritten
 * with (`writtenWith`, see {@link writeProvider}); undefined when there is none left: a rotation
 * that ended (or none began) with one key, with which every Secret was rewritten, starts with `add`.
 * @param starting whether a new rotation may start (true for the command's first look).
 * @throws HostStateError `encryption-rotate-unsupported` (a file kubeception cannot rotate) or
 *   `encryption-rotate-pending` (Secrets not yet rewritten with the only key).
 */
export function nextRotationPhase(c: EncryptionConfig, writtenWith: string | undefined, file: string, starting: boolean): RotationPhase | undefined {
  const why = unrotatable(c);
  if (why) throw new HostStateError('encryption-rotate-unsupported', { what: file, why, fix: 'rotate this file by hand (https://kubernetes.io/docs/tasks/administer-cluster/encrypt-data/#rotating-a-decryption-key)' });
  const first = c.providers[0] as Extract<Provider, { keys: object[] }>;
  const [k0, k1] = first.keys.map((k) => `${first.kind}/${k.name}`);
  if (!k1) {
    if (writtenWith !== k0) throw new HostStateError('encryption-rotate-pending', { what: file, why: `not every Secret is recorded as written with ${k0} (recorded: ${writtenWith ?? 'none'})`, fix: 'run `kubeception run bootstrap` first (its secrets-encryption step rewrites them), then rotate' });
    return starting ? 'add' : undefined;
  }
  // Two keys: the Secrets are not (known to be) written with the first one yet → rewrite. Written
  // with the first: it is the new key (promoted, rewritten: drop the old) or the old one (the new
  // one only added: promote it) — told apart by the key numbers kubeception gives (key-<n>).
  if (writtenWith !== k0) return 'rewrite';
  const [n0, n1] = first.keys.map((k) => Number(/^key-(\d+)$/.exec(k.name)?.[1] ?? Number.NaN));
  if (Number.isNaN(n0) || Number.isNaN(n1) || n0 === n1)
    throw new HostStateError('encryption-rotate-unsupported', { what: file, why: `its keys ${first.keys.map((k) => k.name).join(', ')} are not two key-<n> keys of a rotation`, fix: 'finish this rotation by hand (https://kubernetes.io/docs/tasks/administer-cluster/encrypt-data/#rotating-a-decryption-key)' });
  return n0! > n1! ? 'drop' : 'promote';
}

/** `c` after `phase` (pure; `rewrite` changes no file). */
export function rotated(c: EncryptionConfig, phase: Exclude<RotationPhase, 'rewrite'>): EncryptionConfig {
  const [first, ...rest] = c.providers as [Extract<Provider, { keys: object[] }>, ...Provider[]];
  const n = Math.max(0, ...first.keys.map((k) => Number(/^key-(\d+)$/.exec(k.name)?.[1] ?? 0))) + 1;
  const keys = phase === 'add' ? [...first.keys, newKey(n)] : phase === 'promote' ? [first.keys[1]!, first.keys[0]!] : [first.keys[0]!];
  return { providers: [{ kind: first.kind, keys }, ...rest] };
}
