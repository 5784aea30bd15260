/**
 * Which preflight check ids may be ignored: `--ignore-preflight-errors` names checks of this task (as
 * kubeadm requires); the config's `ignorePreflightErrors` may also name any check kubeception ships,
 * since one config serves bootstrap and join. Pure.
 */
import { ConfigError, InputError } from '../../errors.ts';
import { didYouMean } from '../../util/suggest.ts';
import type { Check } from './preflight-check.ts';

/**
 * `--ignore-preflight-errors` ids must name checks of this task (or be `all`), as kubeadm requires.
 * @throws InputError `preflight-ignore-unknown` listing the known ids.
 */
export function checkIgnoreIds(ids: Iterable<string>, checks: readonly Pick<Check, 'id' | 'ignorable'>[]): void {
  const known = ['all', ...checks.filter((c) => c.ignorable !== false).map((c) => c.id)];
  const unknown = [...ids].filter((id) => !known.includes(id));
  if (unknown.length === 0) return;
  throw new InputError('preflight-ignore-unknown', {
    what: `--ignore-preflight-errors ${unknown.join(',')}`,
    why: `no preflight check of this task has the id${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `"${u}"${didYouMean(u, known)}`).join(', ')}`,
    fix: `use ids from: ${known.join(', ')}`,
  });
}

/**
 * Ids of every ignorable preflight check kubeception ships, in any task (some name a port or a path
 * of the config). A config's `ignorePreflightErrors` may name them all, since one config serves
 * bootstrap and join; test/unit/steps/preflight-ignore.test.ts keeps this list in step with the checks.
 */
export const SHIPPED_CHECK_IDS: readonly RegExp[] = [
  /^(IsPrivilegedUser|KubeconfigReadable|CgroupDriver|KubeletVersion|KubernetesVersion|ImagePull|Certificates|ResolvConf|CNIConfigOrder|NotControlPlane|EtcdVersion|EtcdDataDirVersion|ContainerRuntimeVersion|KubernetesVersionSupport|KernelTunables)$/,
  /^Port-\d+$/,
  /^FileExisting-(etcd|kubelet|kubectl)$/,
  /^Service-(etcd|kubelet|container-runtime)$/,
  /^(DirAvailable|FileAvailable)-.+$/,
];

/**
 * The config's `ignorePreflightErrors` must name checks of this task, shipped checks of any task
 * ({@link SHIPPED_CHECK_IDS}) or `all`: a mistyped id would otherwise ignore nothing, silently.
 * @throws ConfigError `config-invalid` naming the field and the unknown ids.
 */
export function checkConfigIgnoreIds(ids: readonly string[], checks: readonly Pick<Check, 'id' | 'ignorable'>[]): void {
  const own = checks.filter((c) => c.ignorable !== false).map((c) => c.id);
  const unknown = ids.filter((id) => id !== 'all' && !own.includes(id) && !SHIPPED_CHECK_IDS.some((re) => re.test(id)));
  if (unknown.length === 0) return;
  const known = ['all', ...new Set([...own, ...SHIPPED_CHECK_IDS.flatMap((re) => /^\^\((.*)\)\$$/.exec(re.source)?.[1]?.split('|') ?? [])])];
  throw new ConfigError('config-invalid', {
    what: 'ignorePreflightErrors (config)',
    why: `no preflight check kubeception or this task has the id${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `"${u}"${didYouMean(u, known)}`).join(', ')}`,
    fix: `remove or correct ${unknown.join(', ')} in ignorePreflightErrors (ids: ${known.join(', ')}, Port-<port>, FileExisting-<binary>, Service-<unit>, DirAvailable-<path>, FileAvailable-<path>)`,
  });
}
