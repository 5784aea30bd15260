/**
 * The CLI's usage text and its command-line errors: one line saying what is wrong (with "did you
 * mean" for a misspelt command, flag or step id) and a pointer to `--help`, never the whole usage.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from './errors.ts';
import { didYouMean } from './util/suggest.ts';

/** The CLI's commands. */
export const COMMANDS = ['run', 'plan', 'init', 'token', 'certs', 'etcd', 'secrets', 'status', 'upgrade', 'reset', 'serve-join', 'approve-csrs', 'node-upgrade-controller'] as const;

export const USAGE = `usage:
  kubeception run <task> [--config FILE] [--distro NAME] [--only IDS] [--skip IDS] [--dry-run]
                         [--output text|json] [--concurrent] [--ignore-preflight-errors IDS]
  KUBECEPTION_TOKEN=T kubeception run join --url URL --ca-cert-hash sha256:H [--ca-cert-hash …] [--discovery-timeout 60s]
                       [--wait-for-network] [--control-plane [--force]]   (with KUBECEPTION_CERTIFICATE_KEY=K)
      (the token may instead come from --token-file FILE; --token T and --certificate-key K work but warn:
       every local user can read a command line, only root a root process's environment)
  kubeception plan <task> [--config FILE] [--distro NAME] [--only IDS] [--skip IDS] [--output json]
                          simulates every step: the files, units, commands and API objects it would change
                          [--order-only]: only the steps in order with their needs (reads nothing on the host)
  kubeception init [DIR] [--kubeception VERSION|TARBALL]   an editable site: config, tasks/, package.json
  kubeception token create [--ttl 24h (at most 8760h)] [--description TEXT] [--print-join-command]
  kubeception token list [--output json]
  kubeception token delete ID
  kubeception certs check-expiration [--output json]
  kubeception certs renew all|NAME
  kubeception certs upload [--ttl 2h] [--node-name cp2,cp3] [--output json]
                                               shared keys for \`run join --control-plane\`, encrypted;
                                               --node-name: names no bootstrap token may obtain from now on
  kubeception etcd snapshot save|list [--output json]  (on a control-plane node) a verified snapshot of etcd
                                               and the shared PKI (encrypted) in etcd.snapshots.dir; list them
  kubeception etcd snapshot verify|delete NAME [--output json]   hashes and a test restore; remove one
  kubeception etcd restore NAME [--force] [--dry-run] [--output json]
                                               (single control-plane node) etcd and the control plane back
                                               from a snapshot; the old data dir is kept; --force: over a
                                               cluster that still serves
  kubeception status [--wait 5m] [--output json] [--verbose]   (on a control-plane node) every health check:
                                               etcd, apiservers, leaders, nodes, pod network, CoreDNS, join
                                               service, CSR approver, certificates, recovery copy, snapshots,
                                               upgrade; exit 0 healthy, 1 unhealthy
  kubeception secrets rotate-key [--output json]     (on the bootstrap node) a new encryption-at-rest key for
                                               Secrets: added, made first, every Secret rewritten, the old one dropped
  kubeception run rotate-sa-key [--force]          (single control-plane node) a new service-account signing
                                               key: trusted, then signing; a later run retires the old one
                                               once its tokens have expired (--force: now)
  kubeception upgrade plan [vX.Y.Z] [--output json]   versions now and after, and the version-skew checks
  kubeception upgrade apply vX.Y.Z [--timeout 5m]    the control plane rolled to vX.Y.Z (rolled back on failure)
                      [--nodes [--max-unavailable N]]  then the Nodes' kubelets, in batches of at most N
                                                     (default 1), by the node upgrade controller (a
                                                     NodeUpgradePlan: \`upgrade status\`)
  kubeception upgrade node [--kubeconfig FILE]       drain, kubelet config, restart, uncordon (after the distro
                                                     installed the cluster's kubelet version)
  kubeception upgrade status|pause|resume [NAME] [--kubeconfig FILE] [--output json]
                                                     a NodeUpgradePlan (default kubelet): its batches and
                                                     Nodes, or the controller held / let go on
  kubeception upgrade rollback [NAME] [--kubeconfig FILE]
                                                     a Failed plan: the failed Nodes their agents rolled
                                                     back to the previous kubelet return to service
  kubeception reset [--dry-run] [--keep-etcd-data] [--force] [--ignore-preflight-errors EtcdTwoMembers] [--output json]
  kubeception serve-join --listen HOST:PORT --tls-dir DIR [--rate-limit N]   (inside the cluster)
  kubeception approve-csrs                                                   (inside the cluster)
  kubeception node-upgrade-controller                                        (inside the cluster)
  kubeception --version | --help
IDS is a comma-separated list of step ids (or preflight check ids).`;

const HELP = 'see `kubeception --help`';

/** A command-line error: `why` is one line; the fix points to `--help` unless given. */
export function usageError(why: string, fix: string = HELP): InputError {
  return new InputError('usage', { what: 'command line', why, fix });
}

/** An unknown command. */
export function unknownCommand(command: string): InputError {
  return usageError(`unknown command "${command}"${didYouMean(command, COMMANDS)}`, `use one of ${COMMANDS.join(', ')}; ${HELP}`);
}

/** An unknown `--flag`. */
export function unknownFlag(flag: string, known: Iterable<string>): InputError {
  return usageError(`unknown flag --${flag}${didYouMean(flag, known).replace(/"([^"]+)"/, '"--$1"')}`);
}

/** Step ids given to --only/--skip that the task does not have. */
export function unknownStep(taskName: string, id: string, ids: readonly string[]): InputError {
  return usageError(`--only/--skip: task ${taskName} has no step "${id}"${didYouMean(id, ids)}`, `use step ids of ${taskName}: ${ids.join(', ')}`);
}

/** `kubeception <version>` from the package's package.json. */
export function versionText(packageDir: string): string {
  const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
  return `kubeception ${pkg.version}`;
}
