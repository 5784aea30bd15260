/**
 * `kubeception certs check-expiration [--output json]` and `kubeception certs renew all|NAME`.
 *
 * check-expiration prints kubeadm's two tables (certificates, then CAs) over every certificate
 * kubeception issued (lib/pki/expiry.ts); JSON is kubeadm's `CertificateExpirationInfo` shape.
 * renew re-issues for the same keys (lib/pki/renew.ts), re-applies the self-hosted objects (the digest
 * of each component's files on its pod template) and the join service, then rolls what reads them with a surge rollout (the new kube-apiserver binds the
 * port beside the old one, SO_REUSEPORT), restarts the kubelet if its kubeconfig changed, and
 * refreshes the recovery manifest. Key bytes are never printed.
 * @see https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-certs/
 */
import { ExitCode } from '../errors.ts';
import { cluster, endpointCluster, probeApiserver } from '../k8s/apiserver.ts';
import { expiryReport, type ExpiryEntry, type ExpiryReport } from '../pki/expiry.ts';
import { renewHostCertificates, selectNames } from '../pki/renew.ts';
import { applyComponentByComponent, restartLocalControlPlane, selfHostedManifests } from '../steps/self-hosted/self-hosted.ts';
import { ensureJoinService, waitJoinService } from '../steps/join/join-service.ts';
import { renderRecoveryManifest } from '../steps/recovery/recovery.ts';
import { rollAndWait } from '../k8s/rollout.ts';
import { makeContext, realBackends } from '../runtime.ts';
import { runOptions } from '../run-options.ts';
import type { ResolvedConfig } from '../types.ts';

type Args = Record<string, unknown>;
interface IO {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** kubeadm's `Jan 02, 2006 15:04 UTC`. */
const date = (d: Date) => `${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, '0')}, ${d.getUTCFullYear()} ${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')} UTC`;

/** apimachinery's `duration.ShortHumanDuration`, which kubeadm prints as RESIDUAL TIME. */
export function shortHumanDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < -1) return '<invalid>';
  if (s < 0) return '0s';
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  if (s < 86_400 * 365) return `${Math.floor(s / 86_400)}d`;
  return `${Math.floor(s / (86_400 * 365))}y`;
}

function table(rows: string[][]): string {
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]! + 3))).join('').trimEnd()).join('\n');
}

/** The two tables, as kubeadm prints them. */
export function formatExpiry(r: ExpiryReport, now = new Date()): string {
  const exp = (e: ExpiryEntry) => (e.missing ? ['!MISSING!', ''] : [date(e.notAfter!), shortHumanDuration(e.notAfter!.getTime() - now.getTime())]);
  const yn = (b: boolean) => (b ? 'yes' : 'no');
  const certs = [['CERTIFICATE', 'EXPIRES', 'RESIDUAL TIME', 'CERTIFICATE AUTHORITY', 'EXTERNALLY MANAGED'], ...r.certificates.map((e) => [e.name, ...exp(e), e.authority, yn(e.externallyManaged)])];
  const cas = [['CERTIFICATE AUTHORITY', 'EXPIRES', 'RESIDUAL TIME', 'EXTERNALLY MANAGED'], ...r.authorities.map((e) => [e.name, ...exp(e), yn(e.externallyManaged)])];
  return `${table(certs)}\n\n${table(cas)}\n`;
}

/** kubeadm's JSON shape (residualTime in nanoseconds, as Go's Duration), plus `source`. */
export function expiryJson(r: ExpiryReport, now = new Date()) {
  const row = (e: ExpiryEntry) => ({
    name: e.name, source: e.source, expirationDate: e.notAfter?.toISOString() ?? null,
    residualTime: e.notAfter ? (e.notAfter.getTime() - now.getTime()) * 1_000_000 : 0,
    ...(e.authority && { certificateAuthority: e.authority }), externallyManaged: e.externallyManaged, missing: e.missing,
  });
  return { kind: 'CertificateExpirationInfo', apiVersion: 'kubeception.io/v1alpha1', certificates: r.certificates.map(row), certificateAuthorities: r.authorities.map(row) };
}

/** `kubeception certs <sub>`. @returns the exit code. */
export async function certsCommand(sub: string | undefined, name: string | undefined, args: Args, config: ResolvedConfig, packageDir: string, io: IO, redactor?: { add(s: string): void }): Promise<number> {
  const hb = realBackends();
  const ctx = makeContext({ config, options: runOptions({ ignorePreflightErrors: new Set(), addSecret: () => {} }), backends: hb, log: { info: (m) => io.stdout(`${m}\n`), warn: (m) => io.stderr(`warning: ${m}\n`) }, signal: new AbortController().signal, packageDir, step: 'certs' });
  try {
    if (sub === 'check-expiration') {
      const api = (await probeApiserver(ctx, 'final')) === undefined ? await cluster(ctx, 'final') : undefined;
      const report = await expiryReport(config, hb.files, api);
      io.stdout(args.output === 'json' ? `${JSON.stringify(expiryJson(report))}\n` : formatExpiry(report));
      if (!api) io.stderr("note: the apiserver does not answer; the join service's TLS Secret was not checked\n");
      return ExitCode.ok;
    }
    if (sub === 'upload') {
      const { uploadCerts } = await import('../join/upload-certs.ts');
      const { parseDuration } = await import('../join/token.ts');
      const ttlMs = parseDuration(String(args.ttl ?? '2h'));
      if (!ttlMs) throw new (await import('../errors.ts')).InputError('usage', { what: '--ttl', why: `${args.ttl} is not a duration`, fix: 'use e.g. --ttl 2h or --ttl 30m' });
      const names = String(args['node-name'] ?? '').split(',').map((n) => n.trim()).filter(Boolean);
      const badName = names.find((n) => !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(n) || n.length > 253);
      if (badName !== undefined) throw new (await import('../errors.ts')).InputError('usage', { what: '--node-name', why: `"${badName}" is not a node name (lowercase DNS-1123 subdomain)`, fix: 'pass the nodeName of each control-plane node about to join, e.g. --node-name cp2,cp3' });
      const [{ listMembers }, { healthcheckTls }, { etcdClientUrls }] = await Promise.all([import('../etcd/members.ts'), import('../steps/bootstrap/etcd.ts'), import('../etcd/config.ts')]);
      const members = await listMembers(etcdClientUrls(config)[0]!, await healthcheckTls(ctx));
      // Held before the keys go up (after uploadCerts checked its inputs): from then on no bootstrap token can buy these names.
      const up = await uploadCerts(await cluster(ctx, 'final'), config, hb.files, ttlMs, members.flatMap((m) => m.clientURLs), new Date(), names);
      redactor?.add(up.certificateKey);
      redactor?.add(up.token);
      if (args.output === 'json') io.stdout(`${JSON.stringify({ kind: 'UploadedCerts', secret: 'kube-system/kubeception-certs', certificateKey: up.certificateKey, expires: up.expires, joinCommand: up.command, heldNodeNames: names })}\n`);
      else
        io.stdout((names.length ? `[upload-certs] Held node names ${names.join(', ')} for control-plane joins: no bootstrap token can obtain them\n` : '')
          + `[upload-certs] Stored the shared keys, encrypted, in Secret "kubeception-certs" in the "kube-system" Namespace (until ${up.expires})\n`
          + `certificate key: ${up.certificateKey}\n`
          + 'Join a control-plane node with, as root (the key and the token are secrets, in the environment: other local users can read a command line; the key expires at the time above):\n'
          + `${up.command}\n`);
      return ExitCode.ok;
    }
    if (sub !== 'renew') throw new (await import('../errors.ts')).InputError('usage', { what: `certs ${sub ?? ''}`.trim(), why: 'unknown certs subcommand', fix: 'use `kubeception certs check-expiration`, `kubeception certs renew all|NAME` or `kubeception certs upload [--ttl 2h]`' });
    const { joinedControlPlane } = await import('../steps/join/joined-control-plane.ts');
    const joined = await joinedControlPlane(ctx);
    const names = selectNames(ctx, name);
    const renewed = await renewHostCertificates(ctx, names);
    io.stdout(`renewed on the host: ${renewed.join(', ')}\n`);
    // The kubelet reads its kubeconfig at start; the recovery copy follows the control plane.
    const finish = async () => {
      if (renewed.includes('kubelet.conf')) {
        await ctx.systemd.start(config.distro.units.kubelet, { restart: true });
        io.stdout('restarted the kubelet\n');
      }
      await renderRecoveryManifest(ctx);
      io.stdout('Done renewing certificates. The renewed certificates are in use.\n');
      return ExitCode.ok;
    };
    if (joined) {
      // A control-plane node that joined: its pods read its own files; the cluster's objects are the
      // bootstrap node's. Restart the pods here (through the controlPlaneEndpoint, not this node's apiserver).
      const restarted = await restartLocalControlPlane(ctx, await endpointCluster(ctx));
      io.stdout(`restarted on ${config.nodeName}: ${restarted.join(', ') || 'no control-plane pod here'}\n`);
      return finish();
    }
    if ((await probeApiserver(ctx, 'final')) !== undefined) {
      io.stderr('warning: the apiserver does not answer: the control plane was not rolled onto the renewed files; run `kubeception run bootstrap` once it serves\n');
      return ExitCode.ok;
    }
    const api = await cluster(ctx, 'final');
    // The join service first: applying the self-hosted objects starts the kube-apiserver roll, during
    // which requests may land on a surge instance that is still starting.
    if (renewed.includes('kubeception-join') || renewed.includes('apiserver')) {
      await ensureJoinService(ctx);
      await waitJoinService(ctx);
    }
    const { changed, rolled } = await applyComponentByComponent(ctx, api, await selfHostedManifests(ctx, api), { force: true });
    io.stdout(`updated: ${changed.join(', ') || 'nothing changed'}\n`);
    // The join service reads its renewed serving certificate at start.
    rolled.push(...(await rollAndWait(ctx, api, [['Deployment', 'kubeception-join']])));
    io.stdout(`rolled: ${rolled.join(', ')}\n`);
    return finish();
  } finally {
    hb.close();
  }
}
