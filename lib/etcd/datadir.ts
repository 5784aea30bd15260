/**
 * Whose data is in the etcd data dir. kubeception keeps a marker file in the data dir naming the
 * etcd CA (SHA-256 of its public key) the data belongs to:
 * - absent or empty dir → `init` (a new member will be created);
 * - marker naming the current etcd CA → `reuse`;
 * - anything else (data without a marker, or a marker of another CA) → `foreign`: refused, never wiped.
 */
import { join } from 'node:path';
import { ETCD_OWNER_MARKER } from '../constants.ts';
import { HostStateError } from '../errors.ts';
import type { HostFiles } from '../host/files.ts';

/** Result of {@link inspectDataDir}. */
export type DataDirState = { kind: 'init' } | { kind: 'reuse' } | { kind: 'foreign'; why: string };

/** Contents of the marker file. */
export interface OwnerMarker {
  /** `sha256:<hex>` of the etcd CA's SubjectPublicKeyInfo. */
  etcdCA: string;
  nodeName: string;
}

/**
 * Inspects `dataDir`. `etcdCA` is the current etcd CA's SPKI hash, or undefined if there is no CA
 * yet (then any existing data is foreign).
 */
export async function inspectDataDir(files: HostFiles, dataDir: string, etcdCA: string | undefined): Promise<DataDirState> {
  const entries = (await files.list(dataDir)).filter((e) => e !== 'lost+found');
  if (entries.length === 0) return { kind: 'init' };
  const text = await files.read(join(dataDir, ETCD_OWNER_MARKER));
  if (text === undefined) return { kind: 'foreign', why: `it holds etcd data (${entries.join(', ')}) that kubeception did not create` };
  let marker: Partial<OwnerMarker>;
  try {
    marker = JSON.parse(text);
  } catch {
    return { kind: 'foreign', why: `its ${ETCD_OWNER_MARKER} is not valid JSON` };
  }
  if (etcdCA === undefined || marker.etcdCA !== etcdCA)
    return { kind: 'foreign', why: `its data belongs to a cluster whose etcd CA is ${marker.etcdCA ?? 'unknown'}, not this host's${etcdCA ? ` (${etcdCA})` : ' (there is no etcd CA here yet)'}` };
  if (entries.length === 1) return { kind: 'init' }; // marker only: a previous run stopped before etcd wrote data
  return { kind: 'reuse' };
}

/** The error for a foreign data dir. */
export function foreignDataDirError(dataDir: string, why: string): HostStateError {
  return new HostStateError('etcd-data-foreign', {
    what: `etcd data dir ${dataDir}`,
    why: `${why}; kubeception never wipes etcd data`,
    fix: `if that data is not needed, move ${dataDir} aside (e.g. mv ${dataDir} ${dataDir}.old); otherwise restore this cluster's PKI (certificatesDir), or set etcd.dataDir to another directory`,
  });
}
