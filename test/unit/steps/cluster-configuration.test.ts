/** The fixed fields' comparison and record (lib/steps/bootstrap/cluster-configuration.ts): pure. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clusterConfigObject, fixedFieldChanges, RECORD_KEY, recordOf } from '../../../lib/steps/bootstrap/cluster-configuration.ts';
import { sampleConfig } from '../pki/fixtures.ts';
import type { ResolvedConfig } from '../../../lib/types.ts';

const config = sampleConfig();
const net = (n: Partial<ResolvedConfig['networking']>): ResolvedConfig => ({ ...config, networking: { ...config.networking, ...n } });

test('the record holds the three fixed fields by their config paths, as JSON', () => {
  const cm = clusterConfigObject(config) as { data: Record<string, string>; metadata: { labels: Record<string, string> } };
  assert.deepEqual(JSON.parse(cm.data[RECORD_KEY]!), recordOf(config));
  assert.deepEqual(Object.keys(recordOf(config)), ['networking.podSubnet', 'networking.serviceSubnet', 'networking.dnsDomain']);
  assert.equal(cm.metadata.labels['app.kubernetes.io/managed-by'], 'kubeception');
});

test('a changed field is named with both values; spacing in a dual-stack list is no change; an unknown field is none', () => {
  const record = { 'networking.podSubnet': '10.244.0.0/16,fd00:10:244::/56', 'networking.serviceSubnet': config.networking.serviceSubnet };
  assert.deepEqual(fixedFieldChanges(record, net({ podSubnet: '10.244.0.0/16, fd00:10:244::/56', dnsDomain: 'example.internal' })), []);
  assert.deepEqual(fixedFieldChanges(record, net({ podSubnet: '10.244.0.0/16' })), [{ field: 'networking.podSubnet', cluster: '10.244.0.0/16,fd00:10:244::/56', config: '10.244.0.0/16' }]);
  assert.deepEqual(fixedFieldChanges({}, net({ serviceSubnet: '10.112.0.0/12' })), []);
});
