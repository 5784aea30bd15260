/**
 * kubectl on a bed control-plane host (admin.conf), for e2e tests: JSON reads, applying objects,
 * polling until a condition holds, and pods for probing the network from inside.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Host } from '../bed/bed.ts';

export const ADMIN = '/etc/kubernetes/admin.conf';
/** admin.conf on `cp`: distros/kubic puts the kubeconfigs in its secretsDir, /etc/kubernetes/bootstrap-secrets. */
export const adminOf = (cp: Host) => (cp.flavour === 'kubic' ? '/etc/kubernetes/bootstrap-secrets/admin.conf' : ADMIN);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A `node:test` test that prints `[time] N.N s  <name>` when it ends, passed or not (the CI log's per-test times). */
export const timed = (name: string, fn: () => Promise<void>) =>
  test(name, async () => {
    const t0 = Date.now();
    try {
      await fn();
    } finally {
      console.log(`[time] ${((Date.now() - t0) / 1000).toFixed(1)} s  ${name}`);
    }
  });

/** kubectl as the cluster admin on `cp`; throws on a non-zero exit. */
export function kubectl(cp: Host, ...args: string[]): Promise<string> {
  return cp.execOk(['kubectl', `--kubeconfig=${adminOf(cp)}`, ...args], { timeoutMs: 60_000 });
}

/** `kubectl get … -o json`, parsed. */
export async function getJson<T = any>(cp: Host, ...args: string[]): Promise<T> {
  return JSON.parse(await kubectl(cp, 'get', ...args, '-o', 'json')) as T;
}

/** Applies objects (server-side, field manager `e2e`). */
export async function apply(cp: Host, ...objects: object[]): Promise<void> {
  await cp.execOk(['kubectl', `--kubeconfig=${adminOf(cp)}`, 'apply', '--server-side', '--field-manager=e2e', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }), timeoutMs: 60_000 });
}

/**
 * The last `tail` log lines of a control-plane component's pods (`kubectl logs -l component=…`, each
 * line prefixed with its pod), for a failing assertion's message; the error's text if they cannot be read.
 */
export function componentLogs(cp: Host, component: string, tail = 120): Promise<string> {
  return kubectl(cp, '-n', 'kube-system', 'logs', '-l', `component=${component}`, `--tail=${tail}`, '--prefix', '--max-log-requests=6').catch((e) => `(logs of ${component} not read: ${e})`);
}

/** Polls `check` every second until it returns a value (not undefined) or `timeoutMs` passes; fails naming `what` and the last state. */
export async function waitFor<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>, state?: () => Promise<string>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) return assert.fail(`${what}: not within ${timeoutMs / 1000} s${state ? `\n${await state().catch((e) => String(e))}` : ''}`);
    await sleep(1_000);
  }
}

/** A pod of `image` pinned to `nodeName` (tolerating the control-plane taint), running `command`. */
export function pod(name: string, nodeName: string, image: string, command: string[], labels: Record<string, string> = { app: name }): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels },
    spec: {
      nodeName,
      tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image, imagePullPolicy: 'Never', command }],
    },
  };
}

/** Waits until the pods are Running and Ready; returns their IPs by name. */
export async function podsReady(cp: Host, names: string[], timeoutMs = 180_000): Promise<Record<string, string>> {
  const ips: Record<string, string> = {};
  for (const n of names)
    ips[n] = await waitFor(`pod ${n} Ready`, timeoutMs, async () => {
      const p = await getJson(cp, 'pod', n);
      return p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') ? p.status.podIP : undefined;
    }, () => kubectl(cp, 'describe', 'pod', n));
  return ips;
}

/** Runs `sh -c script` in a pod (kubectl exec); returns { code, out: the pod's stdout, err: stderr (the pod's and kubectl's) }. */
export async function inPod(cp: Host, name: string, script: string): Promise<{ code: number; out: string; err: string }> {
  const r = await cp.exec(['kubectl', `--kubeconfig=${adminOf(cp)}`, 'exec', name, '--', 'sh', '-c', script], { timeoutMs: 60_000 });
  // stdout alone: kubectl's own klog lines (e.g. "websocket.go: Unknown stream id 1") go to stderr.
  return { code: r.code, out: r.stdout, err: r.stderr };
}

/** The `Address:` answers of busybox nslookup output (after the `Name:` line). */
export function nslookupAnswers(out: string): string[] {
  const i = out.indexOf('Name:');
  return i < 0 ? [] : [...out.slice(i).matchAll(/Address:\s*([0-9a-f.:]+)/g)].map((m) => m[1]!);
}
