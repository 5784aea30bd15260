/** The node record (lib/host/node-record.ts): reset's removal, on real files. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RealFiles, type HostFiles } from '../../../lib/host/files.ts';
import { NODE_RECORD, removeNodeRecord, writeNodeRecord } from '../../../lib/host/node-record.ts';
import { sampleConfig } from '../pki/fixtures.ts';
import type { ResolvedConfig } from '../../../lib/types.ts';

const withDistro = (name: string): ResolvedConfig => {
  const c = sampleConfig();
  return { ...c, distro: { ...c.distro, name } };
};

test('reset removes the node record, but keeps it (with the warning) when it ran with another distro than the node\'s', async () => {
  const dir = mkdtempSync('/tmp/kc-node-record-');
  try {
    const record = join(dir, 'node.json');
    const real = new RealFiles();
    const at = (p: string) => (p === NODE_RECORD ? record : p);
    const files = { read: (p: string) => real.read(at(p)), remove: (p: string) => real.remove(at(p)), write: (p: string, d: string, o: { mode: number }) => real.write(at(p), d, o) } as unknown as HostFiles;
    assert.equal(await removeNodeRecord(files, withDistro('kubic')), false, 'no record: nothing to remove');
    await writeNodeRecord(files, withDistro('debian'));
    const kept = await removeNodeRecord(files, withDistro('kubic'));
    assert.equal(kept, `kept ${NODE_RECORD}: this node was set up with distro debian, this reset ran with kubic and looked for the node's files at that distro's paths; run \`kubeception reset\` again with distro debian`);
    assert.ok(existsSync(record));
    assert.equal(await removeNodeRecord(files, withDistro('debian')), true);
    assert.ok(!existsSync(record));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
