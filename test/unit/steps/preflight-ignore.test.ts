/**
 * `ignorePreflightErrors` in the config (issue 24, F9): an id no check has was accepted silently
 * (only the flag's ids were checked). Refused now: ids of this task's checks and of every check
 * kubeception ships (one config serves bootstrap and join) are accepted, any other is exit 2 naming
 * the config field. The shipped id patterns are checked against the shipped check lists.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../../lib/errors.ts';
import { controlPlaneChecks, runPreflight, workerChecks, type Check } from '../../../lib/steps/preflight/preflight.ts';
import { SHIPPED_CHECK_IDS } from '../../../lib/steps/preflight/preflight-ids.ts';
import { controlPlaneJoinChecks } from '../../../lib/steps/join/control-plane-join.ts';
import { joinFlagChecks, notControlPlaneCheck } from '../../../lib/steps/join/join.ts';
import { networkChecks } from '../../../lib/steps/preflight/network-checks.ts';
import { pkiPreflightCheck } from '../../../lib/steps/bootstrap/certs.ts';
import { containerRuntimeCheck } from '../../../lib/steps/bootstrap/container-runtime.ts';
import { sampleConfig } from '../pki/fixtures.ts';
import type { RunContext as Context } from '../../../lib/run-options.ts';

const ctx = (ids: string[]) => ({ config: sampleConfig({ ignorePreflightErrors: ids }), options: { ignorePreflightErrors: new Set(ids), ignorePreflightErrorsFlag: [] }, log: { info() {}, warn() {} } }) as unknown as Context;
const siteCheck: Check = { id: 'SiteMotd', run: async () => undefined };

test('an unknown id in the config is refused, naming ignorePreflightErrors, with "did you mean"', async () => {
  await assert.rejects(runPreflight(ctx(['ImagePul']), [siteCheck]), (e: unknown) => {
    assert.ok(e instanceof ConfigError, String(e));
    assert.equal(e.badInput, true);
    assert.match(e.what, /ignorePreflightErrors/);
    assert.match(e.why, /"ImagePul" \(did you mean "ImagePull"\?\)/);
    assert.match(e.fix, /remove/);
    return true;
  });
  // A flag's check that cannot be ignored is not a host check either.
  await assert.rejects(runPreflight(ctx(['JoinToken']), []), ConfigError);
});

test("ids of this task's checks, of other tasks' shipped checks, and `all` are accepted", async () => {
  for (const ids of [['SiteMotd'], ['all'], ['NotControlPlane', 'ImagePull', 'ResolvConf', 'Port-6443', 'DirAvailable--srv-etcd', 'FileAvailable--etc-sysconfig-etcd', 'Service-container-runtime', 'FileExisting-kubectl']])
    await runPreflight(ctx(ids), [siteCheck]);
});

test('SHIPPED_CHECK_IDS matches every ignorable shipped check id and no flag check', () => {
  const c = ctx([]);
  const shipped = [...controlPlaneChecks(c), ...workerChecks(c), ...controlPlaneJoinChecks(c), ...networkChecks, pkiPreflightCheck, containerRuntimeCheck, notControlPlaneCheck, ...joinFlagChecks];
  for (const check of shipped) assert.equal(SHIPPED_CHECK_IDS.some((re) => re.test(check.id)), check.ignorable !== false, check.id);
});
