/**
 * A TCP load balancer in front of the bed's control-plane hosts: Debian's haproxy, run by its stock
 * unit inside one bed host (every other host has haproxy.service disabled: see upper.ts). What a site's
 * load balancer must do for kubeception, and why each setting is there:
 *
 * - `mode tcp` on :6443 and :30000: TLS passes through untouched; clients verify the apiserver's and the
 *   join service's own certificates (the LB address is a SAN of the apiserver's via controlPlaneEndpoint).
 * - `option httpchk GET /readyz` + `http-check expect status 200` with `check check-ssl verify none`:
 *   a backend takes traffic only while its apiserver says it is ready (TCP-open is not enough: a
 *   starting apiserver accepts connections before it serves). `/readyz` is readable anonymously;
 *   `verify none` because haproxy holds no CA (the check is about readiness, not identity).
 * - `inter 500ms fall 2 rise 2`: a dead backend is out within ≈1 s, a recovered one back in ≈1 s.
 * - `timeout connect 1s`, `retries 2`, `option redispatch`: a connection to a backend that died before
 *   the check noticed fails fast and is retried on another server instead of hanging.
 * - `on-marked-down shutdown-sessions`: established sessions to a backend marked down are closed, so
 *   clients (kubelets' watches) reconnect through the LB at once instead of waiting on a dead peer.
 * - `timeout client/server 1h`: watches are long-lived idle TCP streams.
 * - :30000 (the join service's NodePort) gets a plain TCP check.
 *
 * The admin socket (`/run/haproxy-admin.sock` in the LB host) gives each server's check state
 * ({@link lbServers}). Traffic goes only between bed hosts; nothing here connects from the machine.
 */
import type { Host } from './bed.ts';

export interface LoadBalancerOptions {
  /** Frontend and backend port of the apiserver. Default 6443. */
  apiPort?: number;
  /** Frontend and backend port of the join service's NodePort. Default 30000. */
  joinPort?: number;
}

const CFG = '/etc/haproxy/haproxy.cfg';
const SOCK = '/run/haproxy-admin.sock';

/** The haproxy.cfg for `backends` (IPv4 addresses); see the module doc for the reasons. */
export function haproxyConfig(backends: string[], opts: LoadBalancerOptions = {}): string {
  const api = opts.apiPort ?? 6443;
  const join = opts.joinPort ?? 30000;
  for (const b of backends) if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(b)) throw new Error(`lb: backend "${b}" is not an IPv4 address`);
  const servers = (port: number) => backends.map((ip) => `  server ${ip} ${ip}:${port}`).join('\n');
  return `# Written by test/bed/lb.ts
global
  log stdout format raw local0 info
  stats socket ${SOCK} mode 600 level admin
  maxconn 4000

defaults
  mode tcp
  log global
  option tcplog
  option dontlognull
  option redispatch
  retries 2
  timeout connect 1s
  timeout check 1s
  timeout client 1h
  timeout server 1h

frontend apiserver
  bind :${api}
  default_backend apiserver

backend apiserver
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server check check-ssl verify none inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
${servers(api)}

frontend join
  bind :${join}
  default_backend join

backend join
  balance roundrobin
  default-server check inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
${servers(join)}
`;
}

async function writeChecked(lb: Host, backends: string[], opts: LoadBalancerOptions): Promise<void> {
  await lb.writeFile(`${CFG}.new`, haproxyConfig(backends, opts));
  const check = await lb.exec(['haproxy', '-c', '-q', '-f', `${CFG}.new`]);
  if (check.code !== 0) throw new Error(`lb: haproxy rejects the config in ${lb.name}:\n${check.stderr || check.stdout}`);
  await lb.execOk(['mv', `${CFG}.new`, CFG]);
}

/**
 * Makes `lb` the load balancer for `backends`: writes /etc/haproxy/haproxy.cfg, enables haproxy.service
 * there (so it also runs after a reboot of the LB host) and (re)starts it. Health checks start at once;
 * use {@link lbServers} to see which backends are up.
 */
export async function startLoadBalancer(lb: Host, backends: string[], opts: LoadBalancerOptions = {}): Promise<void> {
  await writeChecked(lb, backends, opts);
  await lb.execOk(['systemctl', 'enable', '--quiet', 'haproxy']);
  const r = await lb.exec(['systemctl', 'restart', 'haproxy'], { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`lb: haproxy did not start in ${lb.name}:\n${r.stderr}\n${await lb.journal('haproxy', 30)}`);
}

/**
 * Replaces the backend list with a graceful reload (`systemctl reload`: a new worker takes over the
 * listening sockets; established sessions stay on the old worker until they end).
 */
export async function setBackends(lb: Host, backends: string[], opts: LoadBalancerOptions = {}): Promise<void> {
  await writeChecked(lb, backends, opts);
  const r = await lb.exec(['systemctl', 'reload', 'haproxy'], { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`lb: haproxy reload failed in ${lb.name}:\n${r.stderr}\n${await lb.journal('haproxy', 30)}`);
}

export interface LbServer {
  /** `apiserver` or `join`. */
  backend: string;
  /** The backend's address (its server name). */
  server: string;
  /** haproxy's check status: `UP`, `DOWN`, `UP 1/2` (going down), `DOWN 1/2` (coming up), `MAINT`, `no check`. */
  status: string;
  /** Last check result, e.g. `L7OK`, `L4CON`, `L7STS`. */
  check: string;
}

/** Every server's state, from `show stat` on the LB's admin socket (read inside the LB host). */
export async function lbServers(lb: Host): Promise<LbServer[]> {
  const script = `const s = require('net').connect(process.argv[1]); let o = ''; s.on('data', (d) => (o += d)); s.on('end', () => process.stdout.write(o)); s.on('error', (e) => { console.error(e.message); process.exit(1); }); s.end('show stat\\n');`;
  const csv = await lb.execOk(['node', '-e', script, SOCK], { timeoutMs: 10_000 });
  const [header, ...rows] = csv.split('\n').filter((l) => l.trim());
  const cols = (header ?? '').replace(/^# /, '').split(',');
  const at = (row: string[], name: string) => row[cols.indexOf(name)] ?? '';
  return rows
    .map((l) => l.split(','))
    .filter((r) => !['FRONTEND', 'BACKEND'].includes(at(r, 'svname')))
    .map((r) => ({ backend: at(r, 'pxname'), server: at(r, 'svname'), status: at(r, 'status'), check: at(r, 'check_status') }));
}

/** The addresses haproxy considers UP in `backend` (default `apiserver`). */
export async function upBackends(lb: Host, backend = 'apiserver'): Promise<string[]> {
  return (await lbServers(lb)).filter((s) => s.backend === backend && s.status.startsWith('UP')).map((s) => s.server);
}
