/**
 * The runtime stack of a bed host: which etcd the host's stock `etcd.service` runs and which
 * containerd its `containerd.service` runs. Hosts boot an overlay of the machine's root, so by default
 * they have Debian's (etcd 3.4.23, containerd 1.6.20). The bed's default is a supported stack built from
 * the Go module proxy instead (test/bed/build-etcd.sh, build-containerd.sh, cached by version),
 * bind-mounted read-only over the Debian binaries inside the host, so the unmodified Debian units (and
 * kubeception, which only knows the distro's unit and binary names) run them:
 *
 * | variant  | etcd.service runs                | containerd.service runs                   |
 * | `bed`    | etcd v3.6.16 (+ etcdctl, etcdutl) | containerd v2.4.2 (+ its runc shim, ctr)  |
 * | `debian` | Debian's etcd 3.4.23             | Debian's containerd 1.6.20                |
 *
 * `bootHost({ etcd, containerd })` picks per host; `KUBECEPTION_BED_ETCD` / `KUBECEPTION_BED_CONTAINERD`
 * (`bed` | `debian`) set the default for a whole run. runc is Debian's in both.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import process from 'node:process';
import type { Bind } from './state.ts';

export type RuntimeVariant = 'bed' | 'debian';

/** The etcd the bed builds (build-etcd.sh's default). */
export const BED_ETCD_VERSION = 'v3.6.16';
/** The containerd the bed builds (build-containerd.sh's default). */
export const BED_CONTAINERD_VERSION = 'v2.4.2';

const cache = () => process.env.KUBECEPTION_CACHE ?? '/var/cache/kubeception';
const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function variantFromEnv(name: string): RuntimeVariant {
  const v = process.env[name];
  if (v === undefined || v === '' || v === 'bed') return 'bed';
  if (v === 'debian') return 'debian';
  throw new Error(`bed: ${name}=${v}: want bed or debian`);
}

/** The default etcd variant of this run (`KUBECEPTION_BED_ETCD`, else `bed`). */
export const defaultEtcd = (): RuntimeVariant => variantFromEnv('KUBECEPTION_BED_ETCD');
/** The default containerd variant of this run (`KUBECEPTION_BED_CONTAINERD`, else `bed`). */
export const defaultContainerd = (): RuntimeVariant => variantFromEnv('KUBECEPTION_BED_CONTAINERD');

function binds(dir: string, names: string[], dstDir: string, script: string): Bind[] {
  return names.map((n) => {
    const src = join(dir, n);
    if (!existsSync(src)) throw new Error(`bed: ${src} is missing\nfix: bash ${REPO}/test/bed/${script} (or boot the host with the debian variant)`);
    return { src, dst: join(dstDir, n), readOnly: true };
  });
}

/** Bind mounts that make the host's etcd the bed's build (none for `debian`). @throws if it is not built. */
export function etcdBinds(variant: RuntimeVariant): Bind[] {
  if (variant === 'debian') return [];
  return binds(join(cache(), 'etcd', BED_ETCD_VERSION, 'bin'), ['etcd', 'etcdctl', 'etcdutl'], '/usr/bin', 'build-etcd.sh');
}

/** Bind mounts that make the host's containerd the bed's build (none for `debian`). @throws if it is not built. */
export function containerdBinds(variant: RuntimeVariant): Bind[] {
  if (variant === 'debian') return [];
  return binds(join(cache(), 'containerd', BED_CONTAINERD_VERSION, 'bin'), ['containerd', 'containerd-shim-runc-v2', 'ctr'], '/usr/bin', 'build-containerd.sh');
}
