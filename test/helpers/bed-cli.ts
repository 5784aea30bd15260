/**
 * Running kubeception inside a bed host exactly as an operator would (`node <repo>/bin/kubeception.js`
 * from a site directory holding kubeception.config.ts), and snapshots of host file trees.
 */
import assert from 'node:assert/strict';
import { REPO_ROOT, type Host } from '../bed/bed.ts';

export const SITE = '/root/site';
export const KC = `${REPO_ROOT}/bin/kubeception.js`;

/** Paths kubeception may write on a Debian host. */
export const HOST_PATHS = ['/etc/kubernetes', '/var/lib/etcd', '/etc/default/etcd', '/var/lib/kubelet', '/etc/systemd/system', '/var/lib/kubeception'];

export interface KcResult {
  code: number;
  stdout: string;
  stderr: string;
  events: any[];
}

/** Prefix of the e2e hosts' names (`KUBECEPTION_E2E_PREFIX`, default none), so two runs can share the bed. */
export const E2E_PREFIX = process.env.KUBECEPTION_E2E_PREFIX ?? '';

/**
 * Writes the site config (a TS module exporting `value`). `KUBECEPTION_E2E_ALGORITHM` (e.g.
 * `ECDSA-P256`, `RSA-2048`) sets `encryptionAlgorithm` where `value` leaves it unset, so a suite
 * runs unchanged under each key algorithm.
 */
export async function writeConfig(host: Host, value: unknown, dir = SITE): Promise<void> {
  const alg = process.env.KUBECEPTION_E2E_ALGORITHM;
  const config = alg && value && typeof value === 'object' && !('encryptionAlgorithm' in value) ? { ...value, encryptionAlgorithm: alg } : value;
  await host.writeFile(`${dir}/kubeception.config.ts`, `export default ${JSON.stringify(config, null, 2)};\n`);
}

/** Runs the CLI in the host; parses JSON events when `--output json` is given. */
export async function kc(host: Host, args: string[], opts: { cwd?: string; timeoutMs?: number; env?: Record<string, string> } = {}): Promise<KcResult> {
  const r = await host.exec(['node', KC, ...args], { cwd: opts.cwd ?? SITE, timeoutMs: opts.timeoutMs ?? 240_000, env: opts.env });
  const events = args.includes('json')
    ? r.stdout.split('\n').filter((l) => l.trim()).map((l): unknown => {
        try {
          return JSON.parse(l);
        } catch {
          return assert.fail(`not a JSON event: ${l}`);
        }
      })
    : [];
  return { code: r.code, stdout: r.stdout, stderr: r.stderr, events };
}

/** `path mode uid:gid type sha256` for every entry under `paths` (sorted), so any change shows. */
export async function snapshot(host: Host, paths = HOST_PATHS): Promise<string> {
  const script = `for p in "$@"; do [ -e "$p" ] || { echo "$p absent"; continue; }; find "$p" -xdev -printf '%p %m %U:%G %y\\n' | sort | while read -r path mode owner type; do if [ "$type" = f ]; then echo "$path $mode $owner $(sha256sum < "$path" | cut -c1-16)"; else echo "$path $mode $owner $type"; fi; done; done`;
  return host.execOk(['bash', '-c', script, 'snap', ...paths]);
}

/** Asserts two snapshots are equal, showing the first differing lines. */
export function assertSameTree(before: string, after: string, what: string): void {
  if (before === after) return;
  const a = new Set(before.split('\n'));
  const b = new Set(after.split('\n'));
  const diff = [...[...a].filter((l) => !b.has(l)).map((l) => `- ${l}`), ...[...b].filter((l) => !a.has(l)).map((l) => `+ ${l}`)];
  assert.fail(`${what}: host file tree changed:\n${diff.slice(0, 20).join('\n')}`);
}

/** The step ids with a given event type. */
export const stepsWith = (events: any[], type: string) => events.filter((e) => e.event === type).map((e) => e.step);
