/**
 * A host's identity and bed files, written into its overlay's upper dir from the machine side before
 * each launch (the overlay is not mounted then). First-boot files are written once, so that what the
 * host (or kubeception) changes later survives a reboot.
 */
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  type Dirent,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname } from 'node:path';
import { KUBELET_SYSCTLS } from '../../lib/constants.ts';
import { runOk } from './proc.ts';
import { diskDir, type HostState } from './state.ts';

/** Where the PID-1 wrapper (init.sh) lives inside a host. */
export const INIT = '/usr/local/lib/kubeception-bed/init';

/** Units enabled on the machine that a bed host has no use for (or cannot run in a container). */
export const MASKED_UNITS = [
  'postgresql.service',
  'postgresql@.service',
  'e2scrub_reap.service',
  'e2scrub_all.timer',
  'systemd-timesyncd.service',
  'systemd-pstore.service',
  'apt-daily.timer',
  'apt-daily-upgrade.timer',
  'dpkg-db-backup.timer',
  'fstrim.timer',
  'man-db.timer',
  'console-getty.service',
];

/**
 * Enablement links of the machine that must not act in a host: the stock etcd unit would start with its
 * default data dir, containerd must not start before the bed has configured it (prepareKubeletHost
 * enables it), and haproxy (installed for the HA suite's load balancer) would run in every host on ports
 * the control plane needs; only a load-balancer host starts it (test/bed/lb.ts). The unit files stay, so
 * kubeception (or lb.ts) can configure and start them.
 */
export const DISABLED_UNITS = ['etcd', 'containerd', 'haproxy'];

/** The machine's enablement links of DISABLED_UNITS: systemd's (.wants links and aliases such as
 * etcd2.service) and SysV rc links, all of which `systemctl is-enabled` reports. */
function disabledLinks(): string[] {
  const units = new Set(DISABLED_UNITS.map((u) => `${u}.service`));
  const links: string[] = [];
  const walk = (dir: string) => {
    let entries: Dirent[] = [];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {}
    for (const e of entries) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else if (e.isSymbolicLink() && units.has(basename(readlinkSync(p)))) links.push(p);
    }
  };
  walk('/etc/systemd/system');
  for (const rc of ['0', '1', '2', '3', '4', '5', '6', 'S']) {
    let entries: string[] = [];
    try {
      entries = readdirSync(`/etc/rc${rc}.d`);
    } catch {}
    for (const e of entries) if (DISABLED_UNITS.includes(e.replace(/^[SK]\d\d/, ''))) links.push(`/etc/rc${rc}.d/${e}`);
  }
  return links;
}

/** Values the kubelet insists on (lib/constants.ts); the init shadows any that differ on the VM (see init.sh). */
export { KUBELET_SYSCTLS };

function put(upper: string, path: string, content: string, mode = 0o644): void {
  mkdirSync(dirname(`${upper}${path}`), { recursive: true });
  writeFileSync(`${upper}${path}`, content, { mode });
}

const present = (p: string) => {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

/** Writes the host's identity and bed files into the overlay's upper dir (overlay not mounted). */
export async function prepareUpper(s: HostState, initSource: string): Promise<void> {
  const upper = `${diskDir(s.name)}/upper`;
  const firstBoot = !existsSync(`${diskDir(s.name)}/prepared`);
  if (firstBoot) {
    put(upper, '/etc/hostname', `${s.hostname}\n`);
    const names = s.hostname === s.name ? s.hostname : `${s.hostname} ${s.name}`;
    put(upper, '/etc/hosts', `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n${s.ip}\t${names}\n`);
    put(upper, '/etc/machine-id', `${randomBytes(16).toString('hex')}\n`, 0o444);
    put(upper, '/etc/systemd/journald.conf.d/kubeception-bed.conf', '[Journal]\nReadKMsg=no\n');
    for (const unit of MASKED_UNITS) {
      const link = `${upper}/etc/systemd/system/${unit}`;
      mkdirSync(dirname(link), { recursive: true });
      if (!present(link)) symlinkSync('/dev/null', link);
    }
    for (const link of disabledLinks()) {
      // An overlay whiteout (char device 0:0) hides the machine's link inside the host only.
      if (!present(link) || present(`${upper}${link}`)) continue;
      mkdirSync(dirname(`${upper}${link}`), { recursive: true });
      await runOk(['mknod', `${upper}${link}`, 'c', '0', '0']);
    }
    writeFileSync(`${diskDir(s.name)}/prepared`, '');
  }
  mkdirSync(dirname(`${upper}${INIT}`), { recursive: true });
  copyFileSync(initSource, `${upper}${INIT}`);
  await runOk(['chmod', '0755', `${upper}${INIT}`]);
  for (const [key, value] of Object.entries(KUBELET_SYSCTLS)) {
    put(upper, `${dirname(INIT)}/sysctl/${key}`, `${value}\n`);
  }
}

