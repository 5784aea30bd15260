/**
 * Join messages that tell the truth (issue 14): an HTTPS server that is not the join service (the
 * apiserver's port answering 403) is named at once — one request, not 60 s of retries reported as "did
 * not answer"; malformed join flags are not "fixed" by --ignore-preflight-errors; an image pull
 * message is never cut mid-string.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { discover } from '../../../lib/join/client.ts';
import { joinFlagChecks } from '../../../lib/steps/join/join.ts';
import { runPreflight } from '../../../lib/steps/preflight/preflight.ts';
import { PreflightError } from '../../../lib/errors.ts';
import { firstLine } from '../../../lib/util/text.ts';
import type { RunContext as Context } from '../../../lib/run-options.ts';
import { makeCa, makeLeaf } from './fixtures.ts';

let server: Server;
let port: number;
const requests: string[] = [];

before(async () => {
  const leaf = await makeLeaf(await makeCa('other'), 'apiserver');
  server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const answer = () => res.writeHead(403, { 'content-type': 'application/json' }).end('{"kind":"Status","reason":"Forbidden"}');
    if (req.url?.includes('token-id=slowww')) setTimeout(answer, 3_200);
    else answer();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
after(() => server.close());

test('an HTTP 403 from something that is not the join service fails at once, naming it; one request', async () => {
  const base = `https://127.0.0.1:${port}`;
  await assert.rejects(discover(base, 'abcdef.0123456789abcdef', [`sha256:${'a'.repeat(64)}`], 60_000), (e: any) => {
    assert.equal(e.code, 'join-not-join-service');
    assert.match(e.why, /answered HTTP 403 to GET \/cluster-info: it is not kubeception's join service/);
    assert.doesNotMatch(`${e.why} ${e.fix}`, /within|did not answer/);
    assert.ok(e.badInput, 'exit 2');
    return true;
  });
  assert.deepEqual(requests, ['GET /cluster-info?token-id=abcdef']);
});

test('an answer that takes over 3 s is still read and reported for what it is, not as "did not answer"', async () => {
  requests.length = 0;
  await assert.rejects(discover(`https://127.0.0.1:${port}`, 'slowww.0123456789abcdef', [`sha256:${'a'.repeat(64)}`], 60_000), (e: any) => {
    assert.equal(e.code, 'join-not-join-service');
    assert.match(e.why, /HTTP 403/);
    return true;
  });
  assert.equal(requests.length, 1);
});

test('malformed join flags: preflight refuses them without suggesting --ignore-preflight-errors, even with "all"', async () => {
  const ctx = { options: { ignorePreflightErrors: new Set(['all']), token: 'nope', caCertHash: 'sha256:xyz', joinUrl: 'http://cp:30000' }, log: { info() {}, warn() {} } } as unknown as Context;
  await assert.rejects(runPreflight(ctx, joinFlagChecks), (e: unknown) => {
    assert.ok(e instanceof PreflightError);
    assert.deepEqual(e.checks.map((c) => c.id), ['JoinToken', 'CaCertHash', 'JoinUrl']);
    assert.doesNotMatch(e.fix, /ignore-preflight-errors/);
    return true;
  });
});

test('firstLine never cuts a message mid-string', () => {
  const msg = `failed to pull and unpack image "localhost/kubeception:v0.1.0": failed to resolve reference "localhost/kubeception:v0.1.0": failed to do request: Head "http://10.250.0.1:5000/v2/kubeception/manifests/v0.1.0": dial tcp 10.250.0.1:5000: connect: connection refused\nsecond line`;
  assert.equal(firstLine(msg), msg.split('\n')[0]);
  const long = firstLine(`${'word '.repeat(200)}Head "http://10.250.0.1/v2"`, 100);
  assert.ok(long.endsWith(' …') && long.length <= 102, long);
});
