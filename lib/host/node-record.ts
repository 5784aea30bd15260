/**
 * The node record: what this host was set up with that no distro-dependent file can tell, because
 * the distro itself decides where those files are (`etcdEnvironmentFile`, `secretsDir`, the etcd
 * data dir differ between distros: a node set up as `debian` and read as `kubic` would show none of
 * its files). Kept on every node, control-plane nodes and workers alike: read by the preflight check
 * `NodeConfiguration` (lib/steps/bootstrap/node-configuration.ts) of bootstrap and of every join,
 * written by the `etcd` step of bootstrap and of a control-plane join and by the `kubelet-config`
 * step of a worker's join (its first write), removed by `kubeception reset` on either
 * ({@link removeNodeRecord}).
 *
 * Format (`/var/lib/kubeception/node.json`, 0600 in a 0700 directory; kubeception's state directory,
 * so not in the ownership manifest): `{ apiVersion, kind: 'NodeRecord', distro: '<distro name>' }`.
 * A node set up by a kubeception without this record has none until its next converging run: its
 * distro is unknown, and nothing is compared.
 */
import { join } from 'node:path';
import type { HostFiles } from './files.ts';
import { STATE_DIR } from './owned-manifest.ts';
import type { ResolvedConfig } from '../types.ts';

/** Where the record lives. */
export const NODE_RECORD = join(STATE_DIR, 'node.json');

/** The record document. */
export interface NodeRecord {
  apiVersion: 'kubeception.io/v1alpha1';
  kind: 'NodeRecord';
  /** The distro's name (`debian`, `kubic`, or a site's own under `./distros/<name>/`). */
  distro: string;
}

/** The record's text for `config`. Deterministic: a re-run with the same distro writes nothing. */
export function renderNodeRecord(config: ResolvedConfig): string {
  return `${JSON.stringify({ apiVersion: 'kubeception.io/v1alpha1', kind: 'NodeRecord', distro: config.distro.name } satisfies NodeRecord, null, 1)}\n`;
}

/**
 * The recorded distro in a record's text, or undefined when unknown: no text (no record yet, or a
 * node set up before the record existed), or text that is not a NodeRecord with a distro (the next
 * `etcd` step, on a worker `kubelet-config`, writes it again). Pure.
 */
export function recordedDistro(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  try {
    const doc = JSON.parse(text) as Partial<NodeRecord> | null;
    return doc?.kind === 'NodeRecord' && typeof doc.distro === 'string' && doc.distro !== '' ? doc.distro : undefined;
  } catch {
    return undefined;
  }
}

/** Writes the record for `config`. Host effects: {@link NODE_RECORD} (0600, directory 0700), only when it differs. @returns whether it was written. */
export const writeNodeRecord = (files: Pick<HostFiles, 'write'>, config: ResolvedConfig): Promise<boolean> =>
  files.write(NODE_RECORD, renderNodeRecord(config), { mode: 0o600, dirMode: 0o700 });

/**
 * `kubeception reset`'s removal of the record. Kept when it names another distro than `config`'s:
 * that reset looked for the node's files at the other distro's paths, and the record still tells the
 * next bootstrap or join which distro the files left behind are of.
 * Host effects: {@link NODE_RECORD} removed (nothing when kept).
 * @returns whether it was removed, or (kept) the warning to show.
 */
export async function removeNodeRecord(files: Pick<HostFiles, 'read' | 'remove'>, config: ResolvedConfig): Promise<boolean | string> {
  const recorded = recordedDistro(await files.read(NODE_RECORD));
  if (recorded !== undefined && recorded !== config.distro.name)
    return `kept ${NODE_RECORD}: this node was set up with distro ${recorded}, this reset ran with ${config.distro.name} and looked for the node's files at that distro's paths; run \`kubeception reset\` again with distro ${recorded}`;
  return files.remove(NODE_RECORD);
}
