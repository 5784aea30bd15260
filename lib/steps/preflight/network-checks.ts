/**
 * Preflight checks of host settings that would break cluster DNS or the pod network, each with a
 * stable id (for `--ignore-preflight-errors`) and a fix. Reads only.
 *
 * - `ResolvConf`: the resolv.conf the kubelet hands `dnsPolicy: Default` pods — CoreDNS among them,
 *   whose `forward . /etc/resolv.conf` then uses it — must list upstream servers, none on loopback: a
 *   stub such as systemd-resolved's 127.0.0.53 is, inside the pod, CoreDNS itself (a forwarding loop;
 *   CoreDNS's `loop` plugin stops it, so the pods crash-loop).
 * - `CNIConfigOrder`: the runtime uses the first CNI config in `/etc/cni/net.d` in name order; one that
 *   sorts before flannel's `10-flannel.conflist` would be used instead of flannel.
 * @see kubernetes/cmd/kubeadm/app/preflight/checks.go
 */
import { cidrContains, ipFamily, parseCidr, type Cidr } from '../../net/cidr.ts';
import { CNI_CONF_DIR, FLANNEL_CONFLIST } from '../../../manifests/addons/flannel.ts';
import type { Check } from './preflight-check.ts';
import type { Context } from '../../context.ts';

/** Where systemd-resolved lists the real upstream servers (kubeadm points the kubelet there when resolved runs). */
export const RESOLVED_UPSTREAM_CONF = '/run/systemd/resolve/resolv.conf';
const LOOPBACK = [parseCidr('127.0.0.0/8'), parseCidr('::1/128')] as Cidr[];
/** File extensions libcni loads from the config dir. */
const CNI_EXTENSIONS = /\.(conf|conflist|json)$/;

/** The file the kubelet copies nameservers from for `dnsPolicy: Default` pods (`resolvConf`, default /etc/resolv.conf). */
export function kubeletResolvConf(ctx: Pick<Context, 'config'>): string {
  const v = ctx.config.kubelet.extraConfig.resolvConf;
  return typeof v === 'string' ? v : '/etc/resolv.conf';
}

/** `nameserver` addresses of a resolv.conf text, in order. */
export function nameservers(text: string): string[] {
  return text.split('\n').map((l) => /^\s*nameserver\s+(\S+)/.exec(l)?.[1]).filter((s): s is string => !!s);
}

const resolvConf: Check = {
  id: 'ResolvConf',
  async run(ctx) {
    if (ctx.config.dns.disabled) return undefined;
    const file = kubeletResolvConf(ctx);
    const text = file === '' ? '' : await ctx.files.read(file);
    const servers = nameservers(text ?? '');
    const loopback = servers.filter((s) => ipFamily(s) !== undefined && LOOPBACK.some((c) => cidrContains(c, s)));
    if (servers.length > 0 && loopback.length === 0) return undefined;
    const why =
      text === undefined ? `${file}, which the kubelet hands to pods as their resolver config, does not exist`
      : servers.length === 0 ? `${file || 'resolvConf ""'} lists no nameserver, so CoreDNS would have no upstream resolver`
      : `${file} lists the loopback resolver ${loopback.join(', ')}: inside the CoreDNS pods that is CoreDNS itself, a forwarding loop that makes them crash`;
    const resolved = await ctx.files.exists(RESOLVED_UPSTREAM_CONF);
    return {
      message: why,
      fix: resolved
        ? `set kubelet.extraConfig.resolvConf to '${RESOLVED_UPSTREAM_CONF}' (systemd-resolved's list of the real upstream servers)`
        : `list the upstream DNS servers in ${file || '/etc/resolv.conf'}, or set kubelet.extraConfig.resolvConf to a file that does`,
    };
  },
};

const cniConfigOrder: Check = {
  id: 'CNIConfigOrder',
  async run(ctx) {
    if (ctx.config.podNetwork.plugin !== 'flannel') return undefined;
    const before = (await ctx.files.list(CNI_CONF_DIR)).filter((f) => CNI_EXTENSIONS.test(f) && f < FLANNEL_CONFLIST);
    if (before.length === 0) return undefined;
    return {
      message: `${before.map((f) => `${CNI_CONF_DIR}/${f}`).join(', ')} sort${before.length === 1 ? 's' : ''} before flannel's ${FLANNEL_CONFLIST}: the container runtime would use ${before.length === 1 ? 'it' : 'the first'} instead of flannel`,
      fix: `move ${before.length === 1 ? 'it' : 'them'} out of ${CNI_CONF_DIR} (e.g. to /etc/cni/net.d.disabled/), or set networking.plugin: 'none' to keep the network plugin this host has`,
    };
  },
};

/** The DNS and pod-network checks of a control-plane node. */
export const networkChecks: Check[] = [resolvConf, cniConfigOrder];
