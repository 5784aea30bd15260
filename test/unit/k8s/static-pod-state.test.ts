/** staticPodTrouble: the kubelet's own journal lines (captured on the bed) read as the pod's real state. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { staticPodTrouble } from '../../../lib/k8s/static-pod-state.ts';
import { sampleConfig } from '../pki/fixtures.ts';

const PULL = String.raw`E1201 09:00:03.354811    2210 pod_workers.go:1324] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"kube-apiserver\" with ErrImagePull: \"failed to pull and unpack image \\\"registry.k8s.io/kube-apiserver:v1.35.0\\\": failed to resolve reference \\\"registry.k8s.io/kube-apiserver:v1.35.0\\\": failed to do request: Head \\\"http://127.0.0.1:1/v2/kube-apiserver/manifests/v1.35.0?ns=registry.k8s.io\\\": dial tcp 127.0.0.1:1: connect: connection refused\"" pod="kube-system/bootstrap-kube-apiserver-c13c" podUID="7a0f33c080afc9a73234c5298954f0ee"`;
const LOOP = String.raw`E1201 09:10:00.000000    2210 pod_workers.go:1324] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"kube-apiserver\" with CrashLoopBackOff: \"back-off 20s restarting failed container=kube-apiserver pod=bootstrap-kube-apiserver-c13c_kube-system(abc)\"" pod="kube-system/bootstrap-kube-apiserver-c13c" podUID="abc"`;

function ctx(journal: string[], files: Record<string, string> = {}) {
  return {
    config: sampleConfig(),
    sh: { read: async () => ({ code: 0, stdout: journal.join('\n'), stderr: '' }) },
    files: {
      read: async (p: string) => files[p],
      list: async (d: string) => [...new Set(Object.keys(files).filter((p) => p.startsWith(`${d}/`)).map((p) => p.slice(d.length + 1).split('/')[0]!))],
    },
  } as never;
}

test('an image pull failure of a current image names the image and the registry error', async () => {
  const t = await staticPodTrouble(ctx(['I1201 other line', PULL]), { podPrefix: 'bootstrap-', images: ['registry.k8s.io/kube-apiserver:v1.35.0'], sinceMs: 0 });
  assert.equal(t?.kind, 'image-pull');
  assert.match(t!.message, /^the kubelet cannot pull registry\.k8s\.io\/kube-apiserver:v1\.35\.0: failed to pull and unpack image "registry\.k8s\.io\/kube-apiserver:v1\.35\.0".*connection refused$/);
});

test('pull failures of images no longer in the manifests are ignored (a corrected re-run)', async () => {
  assert.equal(await staticPodTrouble(ctx([PULL]), { podPrefix: 'bootstrap-', images: ['registry.k8s.io/kube-apiserver:v1.34.4'], sinceMs: 0 }), undefined);
});

test('a crash loop names the pod and container with its last log lines', async () => {
  const log = '/var/log/pods/kube-system_bootstrap-kube-apiserver-c13c_abc/kube-apiserver/3.log';
  const t = await staticPodTrouble(ctx([LOOP], { [log]: '2026-12-01T09:09:59Z stderr F Error: unknown flag: --bogus\n' }), { podPrefix: 'bootstrap-', images: [], sinceMs: 0 });
  assert.equal(t?.kind, 'crash-loop');
  assert.match(t!.message, /bootstrap-kube-apiserver-c13c: container kube-apiserver keeps exiting \(CrashLoopBackOff\); its last log lines:\n\s+Error: unknown flag: --bogus/);
});
