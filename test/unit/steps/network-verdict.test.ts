/**
 * networkVerdict: what a Node's conditions say about its pod network, which decides whether bootstrap
 * (with `networking.plugin: none`) installs the join service — so a Node registered a moment ago,
 * whose kubelet has not yet reported its runtime's network, must read as "not known yet", not "no".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { networkVerdict } from '../../../lib/steps/addons/addons.ts';
import type { V1Node } from '../../../lib/k8s/client.ts';

const node = (...conditions: { type: string; status: string; message?: string }[]): V1Node => ({ status: { conditions } }) as V1Node;

describe('networkVerdict', () => {
  it('Ready: up, unless NetworkUnavailable=True', () => {
    assert.equal(networkVerdict(node({ type: 'Ready', status: 'True' })), true);
    assert.equal(networkVerdict(node({ type: 'Ready', status: 'True' }, { type: 'NetworkUnavailable', status: 'False' })), true);
    assert.equal(networkVerdict(node({ type: 'Ready', status: 'True' }, { type: 'NetworkUnavailable', status: 'True' })), false);
  });

  it("not Ready because the runtime's network is not ready: no pod network", () => {
    const msg = 'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized';
    assert.equal(networkVerdict(node({ type: 'Ready', status: 'False', message: msg })), false);
    assert.equal(networkVerdict(node({ type: 'Ready', status: 'Unknown' }, { type: 'NetworkUnavailable', status: 'True' })), false);
  });

  it('a Node just registered (no Ready yet, Unknown, or not Ready for another reason): not known yet', () => {
    assert.equal(networkVerdict(undefined), undefined);
    assert.equal(networkVerdict(node()), undefined);
    assert.equal(networkVerdict(node({ type: 'Ready', status: 'Unknown' })), undefined);
    assert.equal(networkVerdict(node({ type: 'Ready', status: 'False', message: 'container runtime status check may not have completed yet' })), undefined);
    assert.equal(networkVerdict(node({ type: 'Ready', status: 'False', message: 'PLEG is not healthy: pleg has yet to be successful' })), undefined);
  });
});
