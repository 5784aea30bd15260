/**
 * Where a cold bootstrap's time goes, beyond the step timeline: one cold `run bootstrap` on a fresh
 * bed host, then the kubelet's journal milestones (registration attempts, the first pods seen from
 * the apiserver) and each kube-system pod's creation, scheduling and container start, all in
 * seconds from the task's start on one clock (the bed hosts share the machine's). Asserts nothing.
 *
 * Usage (root): `npx tsx bench/trace.ts` (host name `$BENCH_PREFIX-tr`, default prefix `bench`).
 */
import { bootHost, type Host } from '../test/bed/bed.ts';
import { kc, writeConfig } from '../test/helpers/bed-cli.ts';
import { importKubeceptionImage } from '../test/bed/kubeception-image.ts';
import { timeline } from './timeline.ts';

const prefix = process.env.BENCH_PREFIX ?? 'bench';
const ADMIN = '/etc/kubernetes/admin.conf';
let host: Host | undefined;
try {
  host = await bootHost({ name: `${prefix}-tr`, kubelet: true });
  await importKubeceptionImage(host);
  await writeConfig(host, { distro: 'debian', networking: { plugin: process.argv[2] ?? 'none' } });
  // The pivot is skipped so that the bootstrap control plane's containers (and their logs) remain.
  const r = await kc(host, ['run', 'bootstrap', '--output', 'json', '--skip', 'kubelet-pivot,remove-bootstrap-control-plane', ...(process.argv.includes('--concurrent') ? ['--concurrent'] : [])], { timeoutMs: 900_000 });
  // A failed run is traced too (its events and the pods say where it stopped).
  if (r.code !== 0) {
    console.log(`bootstrap exited ${r.code}\n${r.stderr}`);
    console.log(await host.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'get', 'pods', '-o', 'wide']).catch((e: Error) => e.message));
  }
  const t0 = Date.parse(r.events.find((e) => e.event === 'task-started').time);
  const rel = (ms: number) => ((ms - t0) / 1000).toFixed(2).padStart(6);
  const rows: [number, string][] = [];
  for (const l of timeline(r.events)) console.log(`  ${l}`);
  const journal = await host.execOk(['journalctl', '-u', 'kubelet', '-o', 'json', '--no-pager', '--output-fields=MESSAGE']);
  const pats = [/Attempting to register node/, /Successfully registered node/, /Unable to register node/, /SyncLoop ADD" source="api"/, /SyncLoop ADD" source="file"/, /Started kubelet|Starting kubelet/, /Failed to watch|failed to list/, /"Caches populated"/];
  for (const line of journal.split('\n').filter(Boolean)) {
    const j = JSON.parse(line) as { __REALTIME_TIMESTAMP: string; MESSAGE: string | number[] };
    const msg = typeof j.MESSAGE === 'string' ? j.MESSAGE : Buffer.from(j.MESSAGE).toString();
    if (pats.some((p) => p.test(msg))) rows.push([Number(j.__REALTIME_TIMESTAMP) / 1000, `kubelet: ${msg.replace(/^[IWE]\d+ [\d:.]+\s+\d+ /, '').slice(0, 150)}`]);
  }
  type Pod = { metadata: { name: string; creationTimestamp: string }; status: { conditions?: { type: string; status: string; lastTransitionTime: string }[]; containerStatuses?: { name: string; state?: { running?: { startedAt: string } } }[] } };
  type Event = { eventTime?: string; firstTimestamp?: string; metadata: { creationTimestamp: string }; involvedObject: { kind: string; name: string }; reason: string; message: string };
  const pods = JSON.parse(await host.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'get', 'pods', '-o', 'json'])) as { items: Pod[] };
  const evs = JSON.parse(await host.execOk(['kubectl', `--kubeconfig=${ADMIN}`, '-n', 'kube-system', 'get', 'events', '-o', 'json'])) as { items: Event[] };
  for (const p of pods.items) {
    const n = p.metadata.name;
    rows.push([Date.parse(p.metadata.creationTimestamp), `pod ${n} created`]);
    for (const c of p.status.conditions ?? []) rows.push([Date.parse(c.lastTransitionTime), `pod ${n} ${c.type}=${c.status}`]);
    for (const cs of p.status.containerStatuses ?? []) if (cs.state?.running?.startedAt) rows.push([Date.parse(cs.state.running.startedAt), `pod ${n} container ${cs.name} started`]);
  }
  for (const e of evs.items) {
    const at = Date.parse(e.eventTime ?? e.firstTimestamp ?? e.metadata.creationTimestamp);
    rows.push([at, `event ${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}: ${String(e.message).slice(0, 90)}`]);
  }
  // The containers' own logs (CRI log files, ns timestamps): each container's first line, and the
  // control plane's key lines.
  const files = (await host.execOk(['bash', '-c', 'ls /var/log/pods/kube-system_*/*/*.log'])).split('\n').filter(Boolean);
  const keep = /acquired lease|attempting to acquire|Serving securely|Caches are synced|Failed to watch|failed to list|Waiting for caches|became leader|Successfully|readyz|Starting controller|"Started controller/;
  for (const f of files) {
    const name = f.split('/').slice(4, 6).join('/').replace(/^kube-system_/, '').replace(/_[0-9a-f-]{36}\//, '/');
    const lines = (await host.execOk(['cat', f])).split('\n').filter(Boolean);
    lines.forEach((l, i) => {
      const m = /^(\S+) (?:stdout|stderr) [FP] (.*)$/.exec(l);
      if (m && (i === 0 || /kubeception-/.test(name) || (/kube-(apiserver|scheduler|controller-manager)/.test(name) && keep.test(m[2]!)))) rows.push([Date.parse(m[1]!), `log ${name}${i === 0 ? ' (first line)' : ''}: ${m[2]!.replace(/^[IWE]\d+ [\d:.]+\s+\d+ /, '').slice(0, 120)}`]);
    });
  }
  rows.sort((a, b) => a[0] - b[0]);
  console.log('\n  (API times have 1 s resolution except events with eventTime; the journal µs)');
  for (const [at, what] of rows) console.log(`  ${rel(at)}  ${what}`);
} finally {
  await host?.destroy();
}
