/**
 * The journal of `upgrade apply` (lib/steps/upgrade/upgrade.ts writes and reads it): a leaf module, so the
 * upgrade's task state can name the type without importing the upgrade's steps.
 */

/** Where upgrades keep their journal and backups. */
export const UPGRADE_DIR = '/var/lib/kubeception/upgrade';
/** The journal file (JSON of {@link UpgradeJournal}). */
export const JOURNAL = `${UPGRADE_DIR}/journal.json`;

/** The journal of the upgrade in progress (or the last one). */
export interface UpgradeJournal {
  from: string;
  to: string;
  started: string;
  /** Absolute path of this upgrade's backup directory. */
  backupDir: string;
  /** Set once the etcd snapshot is complete. */
  snapshot?: string;
  /** Set once the objects are saved. */
  objects?: string;
  phase: 'started' | 'control-plane' | 'done' | 'rolled-back';
}
