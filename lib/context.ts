/**
 * The typed context every step receives. Steps share data only through {@link TaskState}; all host
 * effects go through `files`, `systemd` and `sh`, so `--dry-run` and `plan` can intercept them.
 */
import type { HostFiles } from './host/files.ts';
import type { Systemd } from './host/systemd.ts';
import type { Shell } from './host/sh.ts';
import type { ResolvedConfig } from './types.ts';

/** Step-scoped log: lines appear under the step in the UI and as `log` events in JSON output. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
}

/** Options from the command line that steps read. */
export interface RunOptions {
  /** `--ignore-preflight-errors`: preflight check ids (or `all`) to report as warnings. */
  ignorePreflightErrors: ReadonlySet<string>;
  /** The ids given by the `--ignore-preflight-errors` flag alone: preflight refuses ids no check has. */
  ignorePreflightErrorsFlag?: readonly string[];
  /** `join --url`: the join service URL. */
  joinUrl?: string;
  /** `join --token`. Never logged. */
  token?: string;
  /** `join --ca-cert-hash` (`sha256:<hex>`). */
  caCertHash?: string;
  /** `join --discovery-timeout`: how long to retry an unreachable join service, in ms. Default 60 000. */
  discoveryTimeoutMs?: number;
  /** `join --control-plane`: this node joins as a further control-plane node. */
  controlPlane?: boolean;
  /** `join --certificate-key` (or KUBECEPTION_CERTIFICATE_KEY): decrypts the uploaded shared keys. Never logged. */
  certificateKey?: string;
  /** `join --force`: accept an etcd of two voting members (`etcd-two-members`). `reset --force`: the same when removing a member. */
  force?: boolean;
  /** `join --wait-for-network`: wait until the pod network is up on this node (its `wait-node-network` step). */
  waitForNetwork?: boolean;
  /** `reset --keep-etcd-data`: keep the etcd data dir (and stop etcd only). */
  keepEtcdData?: boolean;
  /** `upgrade apply --timeout`: how long each control-plane component's rollout may take, in ms. Default 300 000. */
  upgradeTimeoutMs?: number;
  /** `upgrade node --kubeconfig`: credentials that may evict pods (default: admin.conf when present). */
  kubeconfig?: string;
  /** `upgrade apply`: the kubernetesVersion the config file says (the run's config has the target). */
  configKubernetesVersion?: string;
  /** Registers a secret value (e.g. a token created during the run) so no output shows it. */
  addSecret: (value: string) => void;
}

/** Data steps hand to later steps. Each field is written by one step, named in its docstring. */
export interface TaskState {
  /** Written by `certs`: what the PKI reconcile did per certificate. */
  pki?: { name: string; action: string; reason: string }[];
  /** Written by `etcd`: client URLs of the local etcd member. */
  etcdClientUrls?: string[];
  /** Written by `etcd`: whether the data dir was initialised now (`init`) or reused (`reuse`). */
  etcdDataDir?: 'init' | 'reuse';
  /** Set by steps that changed the kubelet's files; `kubelet-start`/`kubelet-pivot` restart it and clear it. */
  kubeletRestart?: boolean;
  /** Written by join's `discovery`: what the join service answered. */
  join?: { apiserver: string; caPem: string };
  /** Written by reset's `residue-report`: what of kubeception's remains on the host. */
  resetReport?: import('./reset/types.ts').ResidueReport;
  /** The reset's ownership facts, read once before anything is removed (lib/reset/ownership.ts `resetFacts`). */
  resetFacts?: import('./reset/types.ts').OwnershipFacts;
  /** Written by `upgrade-preflight` (and kept current by the upgrade steps): the upgrade's journal. */
  upgrade?: import('./upgrade/journal.ts').UpgradeJournal;
  /** Written by `upgrade-node-preflight`: the cluster's version, the running kubelet's, and whether this is a worker. */
  upgradeNode?: { target: string; running: string; worker: boolean };
  /** Written by `bootstrap-token`: the join command for workers (holds the token; printed once, never logged). */
  joinCommand?: string;
  /**
   * Written by `bootstrap-token`: how workers join, without the secret — the join service URL, the CA
   * hash (`sha256:<hex>`), the token id, and whether this run created the token (only then does the
   * end-of-run summary print the join command).
   */
  joinInfo?: { url: string; caCertHash: string; tokenId: string; tokenCreated: boolean };
}

/** The context passed to every `run` and `skipIf`. */
export interface Context {
  readonly config: ResolvedConfig;
  readonly files: HostFiles;
  readonly systemd: Systemd;
  readonly sh: Shell;
  readonly log: Logger;
  readonly options: RunOptions;
  readonly state: TaskState;
  /** Aborted when the step times out or the run is interrupted. */
  readonly signal: AbortSignal;
  /** True under `--dry-run`/`plan`: files and units are not changed. */
  readonly dryRun: boolean;
  /** Under `--dry-run`/`plan`: the API writes the steps would make (see lib/k8s/planned.ts). */
  readonly plannedApi?: import('./k8s/planned.ts').PlannedApiAction[];
  /** Absolute path of the kubeception package (for its manifests/ and distros/). */
  readonly packageDir: string;
}
