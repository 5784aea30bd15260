/**
 * The scale bench's driver, run inside a bed host by bench/scale.ts (`node --import tsx
 * bench/scale-sim.ts`, its settings as JSON in `SCALE_SIM`, see {@link SimSettings}): joins
 * `nodes` simulated nodes in bursts of `burst` against one control plane, each on its side's real join
 * path (bench/scale-node.ts), and times them through watches with the admin kubeconfig:
 *
 * per burst: the burst's bootstrap tokens are created (kubeadm's Secret format; on kubeception also
 * its token index, as `kubeception token create` writes it), the driver waits until the
 * bootstrapsigner has signed every one in cluster-info, then all of the burst's nodes join at once
 * (discovery at most 16 at a time, under the join service's 32 connections per client), and the next
 * burst starts once every Node of this one is Ready (kwok sets Ready). Stops launching bursts past
 * `timeLimitMs`.
 *
 * Prints one JSON object ({@link SimResult}) on stdout (and into `<outDir>/<side>.json`); progress on
 * stderr and into `<outDir>/<side>.log`. Times in ms; instants
 * are ms from the run's start. Network: the join URL and the apiserver (bed addresses) only.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { Cluster } from '../lib/k8s/client.ts';
import { CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE, JWS_PREFIX } from '../lib/join/cluster-info.ts';
import { generateToken, tokenSecret } from '../lib/join/token.ts';
import { syncTokenIndex } from '../lib/join/tokens-api.ts';
import { KUBELET_CLIENT_SIGNER } from '../lib/constants.ts';
import { joinNode, type NodeJoin, type Side } from './scale-node.ts';

/** What bench/scale.ts passes in `SCALE_SIM`. */
export interface SimSettings {
  side: Side;
  nodes: number;
  burst: number;
  timeLimitMs: number;
  /** Node names are `<namePrefix>-<n>`. */
  namePrefix: string;
  /** Path of the admin kubeconfig inside this host. */
  adminKubeconfig: string;
  discoveryUrl: string;
  pin: string;
  /** A directory (bound from the machine) for `<side>.log` (progress, as it happens) and `<side>.json` (the result). */
  outDir: string;
}

/** One node's record. All instants are ms from the run's start. */
export interface SimNode extends NodeJoin {
  burst: number;
  startAt: number;
  readyAt?: number;
  csrCreatedAt?: number;
  csrApprovedAt?: number;
  approvedBy?: string;
  error?: string;
}

export interface SimResult {
  side: Side;
  wallMs: number;
  nodes: SimNode[];
  bursts: { tokensMs: number; signedMs: number; joinMs: number; readyMs: number }[];
  timedOut: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const settings = JSON.parse(process.env.SCALE_SIM ?? '{}') as SimSettings;
const log = (line: string) => {
  const stamped = `${new Date().toISOString()} ${line}\n`;
  process.stderr.write(stamped);
  appendFileSync(`${settings.outDir}/${settings.side}.log`, stamped);
};

/** A concurrency limit of `n`. */
function gate(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (fn) => {
    while (running >= n) await new Promise<void>((r) => waiting.push(r));
    running++;
    try {
      return await fn();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

type Csr = { metadata?: { name?: string }; spec?: { signerName?: string; username?: string }; status?: { conditions?: { type?: string; reason?: string }[] } };
type NodeObj = { metadata?: { name?: string }; status?: { conditions?: { type?: string; status?: string }[] } };

/** Watches CSRs and Nodes; records when each CSR of a bootstrap token was first seen and seen Approved, and when each awaited Node was seen Ready. */
function observe(api: Cluster, t0: number, awaited: Map<string, SimNode>) {
  const csrSeen = new Map<string, { createdAt: number; approvedAt?: number; reason?: string }>();
  const scan = (fn: () => void) => {
    let queued = false;
    return () => {
      if (queued) return;
      queued = true;
      setTimeout(() => {
        queued = false;
        fn();
      }, 20);
    };
  };
  const csrs = api.watch<Csr>({ apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', path: '/apis/certificates.k8s.io/v1/certificatesigningrequests' }, scan(() => {
    const now = Date.now() - t0;
    for (const c of csrs.list()) {
      if (c.spec?.signerName !== KUBELET_CLIENT_SIGNER || !c.spec.username?.startsWith('system:bootstrap:')) continue;
      const name = c.metadata?.name ?? '';
      const seen = csrSeen.get(name) ?? { createdAt: now };
      csrSeen.set(name, seen);
      const approved = c.status?.conditions?.find((x) => x.type === 'Approved');
      if (approved && seen.approvedAt === undefined) Object.assign(seen, { approvedAt: now, reason: approved.reason });
    }
  }), { log });
  const readyScan = () => {
    const now = Date.now() - t0;
    for (const [name, n] of awaited) {
      const ready = nodes.get(name)?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      if (!ready) continue;
      n.readyAt = now;
      awaited.delete(name);
    }
  };
  const nodes = api.watch<NodeObj>({ apiVersion: 'v1', kind: 'Node', path: '/api/v1/nodes' }, scan(readyScan), { log });
  const stop = () => {
    csrs.stop();
    nodes.stop();
  };
  return { csrSeen, readyScan, synced: () => csrs.synced() && nodes.synced(), stop };
}

/** Creates `count` tokens (Secrets at once; on kubeception then the token index once). @returns the tokens. */
async function createTokens(api: Cluster, side: Side, count: number): Promise<string[]> {
  const tokens = Array.from({ length: count }, () => generateToken());
  const now = new Date();
  await api.apply(tokens.map((t) => tokenSecret(t, 3_600_000, now, 'kubeception scale bench')));
  if (side === 'kubeception') await syncTokenIndex(api);
  return tokens;
}

/** Waits until cluster-info holds a signature for every token. @throws after `timeoutMs`. */
async function untilSigned(api: Cluster, tokens: readonly string[], timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const cm = await api.read<{ data?: Record<string, string> } & { apiVersion: string; kind: string }>({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: CLUSTER_INFO_NAME, namespace: CLUSTER_INFO_NAMESPACE } });
    if (tokens.every((t) => cm?.data?.[`${JWS_PREFIX}${t.slice(0, 6)}`])) return;
    if (Date.now() > end) throw new Error(`tokens not signed within ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}

async function main(s: SimSettings): Promise<SimResult> {
  const api = new Cluster(readFileSync(s.adminKubeconfig, 'utf8'), s.adminKubeconfig);
  const kubeletVersion = await api.version();
  const t0 = Date.now();
  const deadline = t0 + s.timeLimitMs;
  const awaited = new Map<string, SimNode>();
  const watch = observe(api, t0, awaited);
  for (let i = 0; !watch.synced(); i++) {
    if (i > 600) throw new Error('the CSR and Node watches did not sync within 60 s');
    await sleep(100);
  }
  const discoveryGate = gate(16);
  const all: SimNode[] = [];
  const bursts: SimResult['bursts'] = [];
  let timedOut = false;
  for (let b = 0; b * s.burst < s.nodes; b++) {
    if (Date.now() > deadline) {
      timedOut = true;
      break;
    }
    const count = Math.min(s.burst, s.nodes - b * s.burst);
    const tb = Date.now();
    const tokens = await createTokens(api, s.side, count);
    const tokensMs = Date.now() - tb;
    await untilSigned(api, tokens, 60_000);
    const signedMs = Date.now() - tb - tokensMs;
    const tj = Date.now();
    const burstNodes = await Promise.all(tokens.map(async (token, i): Promise<SimNode> => {
      const name = `${s.namePrefix}-${b * s.burst + i}`;
      const startAt = Date.now() - t0;
      const base: SimNode = { name, burst: b, startAt, discoveredMs: Number.NaN, postedMs: Number.NaN, certifiedMs: Number.NaN, registeredMs: Number.NaN, csrName: '' };
      try {
        const j = await joinNode({ side: s.side, discoveryUrl: s.discoveryUrl, pin: s.pin, kubeletVersion }, name, token, Math.max(10_000, deadline - Date.now()), discoveryGate);
        const n = { ...base, ...j };
        awaited.set(name, n);
        watch.readyScan(); // Ready may have been seen before the node was awaited
        return n;
      } catch (err) {
        return { ...base, error: (err as Error).message.split('\n')[0] };
      }
    }));
    const joinMs = Date.now() - tj;
    all.push(...burstNodes);
    // Ready is set by kwok; a node still not Ready past the deadline stays without readyAt.
    const mine = burstNodes.filter((n) => !n.error);
    while (mine.some((n) => n.readyAt === undefined) && Date.now() < deadline + 60_000) await sleep(50);
    const readyMs = Date.now() - tj - joinMs;
    bursts.push({ tokensMs, signedMs, joinMs, readyMs });
    const errors = burstNodes.filter((n) => n.error);
    log(`${s.side} burst ${b}: ${count} nodes, tokens ${tokensMs} ms, signed ${signedMs} ms, joined ${joinMs} ms, Ready ${readyMs} ms later${errors.length ? `, ${errors.length} failed (first: ${errors[0]!.error})` : ''}`);
  }
  const readyAts = all.map((n) => n.readyAt).filter((x): x is number => x !== undefined);
  const wallMs = readyAts.length ? Math.max(...readyAts) : Date.now() - t0;
  for (const n of all) {
    const c = watch.csrSeen.get(n.csrName);
    if (c) Object.assign(n, { csrCreatedAt: c.createdAt, csrApprovedAt: c.approvedAt, approvedBy: c.reason });
  }
  watch.stop();
  return { side: s.side, wallMs, nodes: all, bursts, timedOut };
}

const result = await main(settings);
writeFileSync(`${settings.outDir}/${settings.side}.json`, `${JSON.stringify(result)}\n`);
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
