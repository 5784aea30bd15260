/**
 * The version-skew policy of an upgrade, as kubeadm's `EnforceVersionPolicies` applies it
 * (cmd/kubeadm/app/phases/upgrade/policy.go) and the Kubernetes version skew policy states it:
 * the control plane moves one minor at a time and never down a minor; kubelets are never newer than
 * the apiserver and at most three minors older. Pure: the cluster's versions come in as data.
 * @see https://kubernetes.io/releases/version-skew-policy/
 */

/** A parsed `vMAJOR.MINOR.PATCH`. */
export interface Version {
  major: number;
  minor: number;
  patch: number;
}

/** `v1.34.4` (or `1.34.4`, or a kubelet's `v1.34.4+abc`) → its numbers; undefined if it is not one. */
export function parseVersion(v: string | undefined): Version | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:[+-].*)?$/.exec(v?.trim() ?? '');
  return m ? { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) } : undefined;
}

/** Negative, zero or positive as `a` is older than, equal to or newer than `b`. */
export function compareVersions(a: Version, b: Version): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** The minimum etcd version kubeadm v1.34/v1.35 accepts as external etcd (`MinExternalEtcdVersion`). */
export const KUBEADM_MIN_EXTERNAL_ETCD = '3.5.24';

/** The versions an upgrade plan is computed from. */
export interface ClusterVersions {
  /** The apiserver's `/version` gitVersion (kubeadm's "cluster version"). */
  cluster: string;
  /** Kubelet version per node (`status.nodeInfo.kubeletVersion`). */
  kubelets: { node: string; version: string }[];
  /** The local etcd member's version (its Maintenance/Status), if known. */
  etcd?: string;
}

/** One finding of the policy: `error`s refuse the upgrade (exit 2), `warning`s are printed. */
export interface SkewCheck {
  /** Stable id, e.g. `ControlPlaneMinorSkew`. */
  id: string;
  severity: 'error' | 'warning';
  why: string;
  fix: string;
}

/**
 * The policy checks for moving `current` to `target`.
 * @param target `vX.Y.Z` (callers validate its form first; an unparsable one is reported here too).
 * @returns every failed check (empty when the upgrade may go ahead).
 */
export function skewChecks(current: ClusterVersions, target: string): SkewCheck[] {
  const out: SkewCheck[] = [];
  const t = parseVersion(target);
  const c = parseVersion(current.cluster);
  if (!t || !/^v\d+\.\d+\.\d+$/.test(target)) return [{ id: 'TargetVersion', severity: 'error', why: `"${target}" is not a released version like v1.35.4`, fix: 'give the target as vMAJOR.MINOR.PATCH' }];
  if (!c) return [{ id: 'ClusterVersion', severity: 'error', why: `the apiserver reports "${current.cluster}", not a version`, fix: 'check `kubectl version`; the cluster must answer before it can be upgraded' }];
  const tv = `${t.major}.${t.minor}`;
  const cv = `${c.major}.${c.minor}`;
  if (t.major !== c.major || t.minor > c.minor + 1)
    out.push({ id: 'ControlPlaneMinorSkew', severity: 'error', why: `${current.cluster} → ${target} skips a minor: the control plane moves one minor at a time`, fix: `upgrade to the latest v${c.major}.${c.minor + 1}.x first, then to ${target}` });
  else if (t.minor < c.minor)
    out.push({ id: 'ControlPlaneDowngrade', severity: 'error', why: `${target} is an older minor than the cluster's ${current.cluster} (${tv} < ${cv}): kubeception does not move a control plane down a minor (etcd may hold objects of the newer API)`, fix: `restore the etcd snapshot and objects that \`upgrade apply\` saved before the upgrade, or choose a v${cv}.x target` });
  for (const k of current.kubelets) {
    const kv = parseVersion(k.version);
    if (!kv) {
      out.push({ id: 'KubeletVersion', severity: 'warning', why: `node ${k.node} reports kubelet version "${k.version}"`, fix: 'check the node: `kubectl get node -o wide`' });
      continue;
    }
    if (compareVersions(kv, t) > 0)
      out.push({ id: 'KubeletNewerThanTarget', severity: 'error', why: `the kubelet on ${k.node} is ${k.version}, newer than ${target}: a kubelet must never be newer than the kube-apiserver`, fix: `upgrade to ${k.version.replace(/[+-].*$/, '')} or later, or install a kubelet of at most ${target} on ${k.node}` });
    else if (kv.major !== t.major || t.minor - kv.minor > 3)
      out.push({ id: 'KubeletTooOld', severity: 'error', why: `the kubelet on ${k.node} is ${k.version}, more than three minors older than ${target}`, fix: `upgrade that node first (\`kubeception upgrade node\` with a kubelet of v${t.major}.${t.minor - 3}.x or newer installed), or choose an older target` });
  }
  const e = parseVersion(current.etcd);
  if (current.etcd !== undefined && e && compareVersions(e, parseVersion(KUBEADM_MIN_EXTERNAL_ETCD)!) < 0)
    out.push({ id: 'EtcdVersion', severity: 'warning', why: `etcd is ${current.etcd}; kubeadm of ${tv} accepts external etcd ${KUBEADM_MIN_EXTERNAL_ETCD} or newer (kubeception does not install etcd: the distro does)`, fix: `upgrade the distro's etcd package to ${KUBEADM_MIN_EXTERNAL_ETCD} or newer when it offers one` });
  return out;
}
