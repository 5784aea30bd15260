/**
 * What each shipped task reads and writes beyond the shared core ({@link Context}): its options
 * (flags of its command) and its state (data one step hands to later ones), declared in parts named
 * for the steps that write them. A step function takes the context of the parts it reads — e.g.
 * `startKubelet(ctx: Context<object, KubeletState>)` — and a task file declares its own:
 *
 * ```ts
 * export default task('join', [ … ], { concurrent: true }) satisfies Task<JoinContext>;
 * ```
 * so a step that reads another task's fields (the upgrade's journal in a join) does not compile.
 * Every key is required, its value `undefined` until its writer runs (the runner starts each run's
 * state empty). A leaf module: it imports only data types.
 */
import type { Context } from '../context.ts';
import type { OwnershipFacts, ResidueReport } from '../reset/types.ts';
import type { UpgradeJournal } from '../upgrade/journal.ts';
import type { RestoreFacts } from '../etcd/restore-plan.ts';
import type { SaRotationPhase } from '../pki/sa-rotation.ts';

// ---- options, per command ----

/** The flags of `run join`. */
export interface JoinOptions {
  /** `--url`: the join service URL. */
  joinUrl: string | undefined;
  /** `--token` (or KUBECEPTION_TOKEN, --token-file). Never logged. */
  token: string | undefined;
  /** `--ca-cert-hash` (`sha256:<hex>`, comma-separated when repeated). */
  caCertHash: string | undefined;
  /** `--discovery-timeout`: how long to retry an unreachable join service, in ms. Default 60 000. */
  discoveryTimeoutMs: number | undefined;
  /** `--control-plane`: this node joins as a further control-plane node. */
  controlPlane: boolean | undefined;
  /** `--certificate-key` (or KUBECEPTION_CERTIFICATE_KEY): decrypts the uploaded shared keys. Never logged. */
  certificateKey: string | undefined;
  /** `--force`: accept an etcd of two voting members (`etcd-two-members`). */
  force: boolean | undefined;
  /** `--wait-for-network`: wait until the pod network is up on this node (its `wait-node-network` step). */
  waitForNetwork: boolean | undefined;
}

/** The flags of `reset`. */
export interface ResetOptions {
  /** `--keep-etcd-data`: keep the etcd data dir (and stop etcd only). */
  keepEtcdData: boolean | undefined;
  /** `--force`: no confirmation prompt (as kubeadm reset's). Leaving etcd with two voting members is accepted by `--ignore-preflight-errors EtcdTwoMembers`, not by this. */
  force: boolean | undefined;
}

/** The flags of `upgrade apply`. */
export interface UpgradeApplyOptions {
  /** `--timeout`: how long each control-plane component's rollout may take, in ms. Default 300 000. */
  upgradeTimeoutMs: number | undefined;
  /** The kubernetesVersion the config file says (the run's config has the target). */
  configKubernetesVersion: string | undefined;
}

/** The flags of `upgrade node`. */
export interface UpgradeNodeOptions {
  /** `--kubeconfig`: credentials that may evict pods (default: admin.conf when present). */
  kubeconfig: string | undefined;
}

/** The flags of `etcd restore SNAPSHOT`. */
export interface RestoreOptions {
  /** The snapshot's name (`etcd-snapshot-<node>-<UTC time>`): the command's argument. */
  restoreSnapshot: string | undefined;
  /** `--force`: restore over a cluster that still serves (what it wrote since the snapshot is lost from the API; the old data dir is kept). */
  force: boolean | undefined;
}

/** The flags of `run rotate-sa-key`. */
export interface SaRotationOptions {
  /** `--force`: retire the previous service-account key before its tokens have expired (lib/pki/sa-rotation.ts RETIRE_AFTER_MS). */
  force: boolean | undefined;
}

// ---- state, per writer ----

/** Written by `certs`: what the PKI reconcile did per certificate. */
export interface PkiState {
  pki: { name: string; action: string; reason: string }[] | undefined;
}

/** Written by `etcd` / `etcd-join`. */
export interface EtcdState {
  /** Client URLs of the local etcd member. */
  etcdClientUrls: string[] | undefined;
  /** Whether the data dir was initialised now (`init`) or reused (`reuse`). */
  etcdDataDir: 'init' | 'reuse' | undefined;
}

/** Set by steps that changed the kubelet's files; `kubelet-start`/`kubelet-pivot`/`kubelet-restart` restart it and clear it. */
export interface KubeletState {
  kubeletRestart: boolean | undefined;
  /**
   * The kubelet files this run rewrote while the kubelet ran (path → the text before), so that
   * `kubelet-start` can write them back when the kubelet does not run with the new ones.
   */
  kubeletPrevious: Record<string, string> | undefined;
}

/** Written by join's `discovery`: what the join service answered. */
export interface DiscoveryState {
  join: { apiserver: string; caPem: string } | undefined;
}

/** Written by `bootstrap-token`. */
export interface BootstrapTokenState {
  /** The join command for workers (holds the token; printed once, never logged). */
  joinCommand: string | undefined;
  /**
   * How workers join, without the secret — the join service URL, the CA hash (`sha256:<hex>`), the
   * token id, and whether this run created the token (only then does the end-of-run summary print
   * the join command).
   */
  joinInfo: { url: string; caCertHash: string; tokenId: string; tokenCreated: boolean } | undefined;
}

/** The reset's. */
export interface ResetState {
  /** Written by `residue-report`: what of kubeception's remains on the host. */
  resetReport: ResidueReport | undefined;
  /** The ownership facts, read once before anything is removed (lib/reset/ownership.ts `resetFacts`). */
  resetFacts: OwnershipFacts | undefined;
}

/** Written by `upgrade-preflight` (and kept current by the upgrade steps): the upgrade's journal. */
export interface UpgradeState {
  upgrade: UpgradeJournal | undefined;
}

/**
 * Written by `upgrade-node-preflight`: the cluster's version, the kubelet binary's, the running
 * kubelet's, and whether this is a worker; `restoreBinary` by a `kubelet-install` step that can put
 * the previous kubelet binary back (`onKubeletRollback`), which `kubelet-restart` calls when the new
 * kubelet does not come up.
 */
export interface UpgradeNodeState {
  upgradeNode: { target: string; binary: string; running: string; worker: boolean; restoreBinary?: () => Promise<string> } | undefined;
}

/** Written by `restore-preflight` (the snapshot, what the restore does), then `restore-data-dir` and `restore-done`. */
export interface RestoreState {
  restore: RestoreFacts | undefined;
}

/** Written by rotate-sa-key's `preflight`: the phase the service-account files were in when the run began, and when retiring is due (ms since the epoch; undefined: not recorded). */
export interface SaRotationState {
  saRotation: { start: SaRotationPhase; retireDueMs: number | undefined } | undefined;
}

// ---- the shipped tasks ----

/** `run bootstrap` (tasks/bootstrap.ts): no options of its own. */
export type BootstrapOptions = object;
export type BootstrapState = PkiState & EtcdState & KubeletState & BootstrapTokenState;
export type BootstrapContext = Context<BootstrapOptions, BootstrapState>;

/** `run join` (tasks/join.ts). */
export type JoinState = DiscoveryState & PkiState & EtcdState & KubeletState;
export type JoinContext = Context<JoinOptions, JoinState>;

/** `reset` (tasks/reset.ts). */
export type ResetContext = Context<ResetOptions, ResetState>;

/** `upgrade apply` (tasks/upgrade-apply.ts). */
export type UpgradeApplyState = UpgradeState;
export type UpgradeApplyContext = Context<UpgradeApplyOptions, UpgradeApplyState>;

/** `upgrade node` (tasks/upgrade-node.ts). */
export type UpgradeNodeTaskState = UpgradeNodeState & KubeletState;
export type UpgradeNodeContext = Context<UpgradeNodeOptions, UpgradeNodeTaskState>;

/** `etcd restore SNAPSHOT` (tasks/etcd-restore.ts). */
export type RestoreTaskState = RestoreState & PkiState & EtcdState & KubeletState;
export type RestoreContext = Context<RestoreOptions, RestoreTaskState>;

/** `run rotate-sa-key` (tasks/rotate-sa-key.ts). */
export type SaRotationContext = Context<SaRotationOptions, SaRotationState>;
