/**
 * Renewing certificates on the host (`kubeception certs renew all|NAME`): each named leaf is
 * re-issued for its existing key (the join service's transport certificate gets a new pair: its CA is
 * thrown away by design) (the key file is never rewritten), with the current CA; kubeconfigs
 * are rewritten with the re-issued client certificate and the *current* CA (kubeadm#2027). Uses
 * lib/pki's exported `reconcileLeaf` with an unbounded renewal window, which forces a re-issue.
 * Host effects: certificate files 0644, kubeconfigs 0600, through `ctx.files` (atomic).
 * @see kubernetes/cmd/kubeadm/app/phases/certs/renewal/manager.go
 */
import { join } from 'node:path';
import { HostStateError, InputError } from '../errors.ts';
import { certSpecs, kubeconfigClientSpecs, type FileLeafSpec, type LeafSpec } from './certs.ts';
import { reconcileLeaf } from './leaf.ts';
import { parseKubeconfig, renderKubeconfig } from '../k8s/kubeconfig.ts';
import { kubeconfigPaths } from '../k8s/endpoints.ts';
import { reconcileTransportCert } from '../join/transport-cert.ts';
import type { Context } from '../context.ts';

type Ctx = Pick<Context, 'config' | 'files'>;
const display = (name: string) => name.replace('/', '-');

/** Renewable names: PKI leaves (kubeadm's display names), the kubeconfigs, the join service's certificate. */
export function renewableNames(ctx: Pick<Context, 'config'>): string[] {
  return [
    ...certSpecs(ctx.config).filter((s) => s.kind === 'leaf').map((s) => display(s.name)),
    'admin.conf', 'controller-manager.conf', 'scheduler.conf', 'kubelet.conf', 'kubeception-join',
  ];
}

/**
 * Checks `which` (`all` or a name) before anything is written.
 * @throws InputError `certs-unknown` listing the renewable names.
 */
export function selectNames(ctx: Pick<Context, 'config'>, which: string | undefined): Set<string> {
  const all = renewableNames(ctx);
  if (which === 'all') return new Set(all);
  if (which && all.includes(which)) return new Set([which]);
  throw new InputError('certs-unknown', { what: `certs renew ${which ?? ''}`.trim(), why: which ? `no certificate named "${which}"` : 'no certificate named', fix: `use \`all\` or one of: ${all.join(', ')}` });
}

async function caOf(ctx: Ctx, caName: string) {
  const [certPem, keyPem] = await Promise.all(['crt', 'key'].map((e) => ctx.files.read(join(ctx.config.certificatesDir, `${caName}.${e}`))));
  if (!certPem || !keyPem) throw new HostStateError('certs-ca-missing', { what: join(ctx.config.certificatesDir, `${caName}.crt`), why: 'the CA or its key is not on this host: kubeception cannot sign for it (externally managed)', fix: 'renew these certificates with the CA that holds the key' });
  return { certPem, keyPem };
}

/** Re-issues one file leaf for its key. @returns true if written. */
async function renewFile(ctx: Ctx, spec: FileLeafSpec): Promise<boolean> {
  const [certPem, keyPem] = await Promise.all([ctx.files.read(spec.certPath), ctx.files.read(spec.keyPath)]);
  if (!keyPem) throw new HostStateError('certs-key-missing', { what: spec.keyPath, why: 'the key is missing; renewal keeps keys and never creates them', fix: 'run `kubeception run bootstrap` to create it' });
  const leaf = await reconcileLeaf(spec, { certPem, keyPem }, await caOf(ctx, spec.caName), ctx.config, { renewBeforeDays: Number.POSITIVE_INFINITY });
  return ctx.files.write(spec.certPath, leaf.certPem, { mode: 0o644 });
}

/** Re-issues a kubeconfig's client certificate for its key; writes it with the current CA, same server. */
async function renewKubeconfig(ctx: Ctx, spec: LeafSpec, paths: string[]): Promise<boolean> {
  const ca = await caOf(ctx, 'ca');
  let written = false;
  for (const path of paths) {
    const text = await ctx.files.read(path);
    if (text === undefined) continue;
    const k = parseKubeconfig(text, path);
    if (!k.keyPem || !k.server) continue; // a kubeconfig naming the kubelet's rotating file: the kubelet renews it (CSR)
    const leaf = await reconcileLeaf(spec, { certPem: k.certPem, keyPem: k.keyPem }, ca, ctx.config, { renewBeforeDays: Number.POSITIVE_INFINITY });
    written = (await ctx.files.write(path, renderKubeconfig({ server: k.server, caPem: ca.certPem, user: spec.commonName, certPem: leaf.certPem, keyPem: leaf.keyPem }), { mode: 0o600 })) || written;
  }
  return written;
}

/**
 * Renews `names` (from {@link selectNames}) on the host.
 * @returns the names renewed, in table order.
 * @throws HostStateError `certs-ca-missing` / `certs-key-missing`.
 */
export async function renewHostCertificates(ctx: Ctx, names: Set<string>): Promise<string[]> {
  const done: string[] = [];
  for (const s of certSpecs(ctx.config)) {
    if (s.kind !== 'leaf' || !names.has(display(s.name))) continue;
    await renewFile(ctx, s);
    done.push(display(s.name));
  }
  const p = kubeconfigPaths(ctx.config);
  const confs: Record<string, string[]> = {
    admin: [p.admin, p.bootstrapAdmin], 'controller-manager': [p.controllerManager, p.bootstrapControllerManager], scheduler: [p.scheduler, p.bootstrapScheduler], kubelet: [p.kubelet],
  };
  for (const spec of kubeconfigClientSpecs(ctx.config)) {
    if (!names.has(`${spec.name}.conf`)) continue;
    if (await renewKubeconfig(ctx, spec, confs[spec.name] ?? [])) done.push(`${spec.name}.conf`);
  }
  // The join service's transport certificate comes from a throw-away CA (lib/join/transport-cert.ts):
  // renewing it means a new pair; the join service is rolled by the caller.
  const certPath = join(ctx.config.certificatesDir, 'kubeception-join.crt');
  const keyPath = join(ctx.config.certificatesDir, 'kubeception-join.key');
  if (names.has('kubeception-join') && (await ctx.files.exists(certPath))) {
    const tls = await reconcileTransportCert({}, (await ctx.files.read(join(ctx.config.certificatesDir, 'ca.crt'))) ?? '');
    await ctx.files.write(keyPath, tls.keyPem, { mode: 0o600 });
    await ctx.files.write(certPath, tls.certPem, { mode: 0o644 });
    done.push('kubeception-join');
  }
  return done;
}
