/**
 * The data types of `kubeception reset` that its task state carries: the residue report
 * (lib/reset/residue.ts) and the ownership facts (lib/reset/ownership.ts). A leaf module: the
 * context types import it, and it imports nothing of the reset's code.
 */
import type { OwnedKind } from '../host/owned-manifest.ts';

/** Residue categories, in report order. */
export const CATEGORIES = ['processes', 'containers', 'mounts', 'netns', 'links', 'routes', 'chains', 'ports', 'files', 'units'] as const;
export type Category = (typeof CATEGORIES)[number];

/** The report. `residue` lists what of ours remains per category (empty: clean). */
export interface ResidueReport {
  kind: 'ResetReport';
  residue: Record<Category, string[]>;
  /** Files in the scanned directories (and candidates) not proven this cluster's: kept. */
  foreign: string[];
  /** Other state that looks like the cluster's but is not proven so (another runtime's): kept. */
  foreignState: { mounts: string[]; netns: string[]; links: string[]; chains: string[] };
  /** How ownership was decided, when it matters (e.g. no ownership manifest). */
  notes: string[];
  /** What was kept on purpose (e.g. the etcd data dir under `--keep-etcd-data`). */
  kept: string[];
}

/** Everything the ownership rules decide on, read once from the host. */
export interface OwnershipFacts {
  /** The manifest's paths, or undefined on a host set up before the manifest (or never by kubeception). */
  recorded?: ReadonlyMap<string, OwnedKind>;
  /** The kubelet on this host is kubeception's (its config or drop-in recorded or marked). */
  kubelet: boolean;
  /** kubeception's flannel ran here (the kubelet is ours and `networking.plugin` is flannel). */
  flannel: boolean;
  /** This cluster's CNI network names, and the pod network's bridge. */
  networks: string[];
  bridge?: string;
  /** The flannel conflist holds exactly what kubeception's DaemonSet installs. */
  flannelConfOurs: boolean;
}
