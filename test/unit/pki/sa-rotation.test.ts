/** The service-account key rotation's phases and files (lib/pki/sa-rotation.ts), on keys made by openssl. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PkiError } from '../../../lib/pki/errors.ts';
import { loadPrivateKey } from '../../../lib/pki/keys.ts';
import { jwtKeyId, keyId, publicKeys, retired, saRotationPhase, trustNext, type SaFiles } from '../../../lib/pki/sa-rotation.ts';
import { shell } from './fixtures.ts';

const newKey = () => shell('openssl ecparam -name prime256v1 -genkey -noout');
const pubOf = (pem: string) => shell(`printf '%s' '${pem}' | openssl pkey -pubout`);
const paths = { key: '/pki/sa.key', pub: '/pki/sa.pub', next: '/pki/sa-next.key' };
const files = (key: string | undefined, pub: string | undefined, next?: string): SaFiles => ({ key, pub, next, paths });
const kid = (pem: string) => keyId(loadPrivateKey(pem, 'k', false));

describe('keyId', () => {
  it("is the apiserver's kid: base64url of the SHA-256 of the SPKI DER (computed here by openssl)", async () => {
    const k = await newKey();
    const expected = (await shell(`printf '%s' '${k}' | openssl pkey -pubout -outform der | openssl dgst -sha256 -binary | base64 -w0`)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    assert.equal(kid(k), expected);
    assert.equal(keyId(publicKeys(await pubOf(k), 'p')[0]!), expected, 'the same from the public key');
  });
});

describe('saRotationPhase walks trust-next → sign-next → retire → trust-next', () => {
  it('through the files each phase writes', async () => {
    const [k0, k1] = [await newKey(), await newKey()];
    const p0 = await pubOf(k0);
    const start = saRotationPhase(files(k0, p0));
    assert.deepEqual(start, { phase: 'trust-next', signing: kid(k0) });

    const both = trustNext(p0, paths.pub, loadPrivateKey(k1, 'k1', false));
    assert.deepEqual(publicKeys(both, paths.pub).map(keyId), [kid(k0), kid(k1)], 'the signing key first, the new one appended');
    assert.equal(trustNext(both, paths.pub, loadPrivateKey(k1, 'k1', false)), both, 'trusting the same key again changes nothing');
    assert.deepEqual(saRotationPhase(files(k0, both, k1)), { phase: 'sign-next', signing: kid(k0), next: kid(k1) });

    // Killed after sa.key was written, before sa-next.key was removed: still sign-next (the same key).
    assert.deepEqual(saRotationPhase(files(k1, both, k1)), { phase: 'sign-next', signing: kid(k1), next: kid(k1) });
    assert.deepEqual(saRotationPhase(files(k1, both)), { phase: 'retire', signing: kid(k1), previous: [kid(k0)] });

    const only = retired(k1, paths.key);
    assert.deepEqual(publicKeys(only, paths.pub).map(keyId), [kid(k1)]);
    assert.deepEqual(saRotationPhase(files(k1, only)), { phase: 'trust-next', signing: kid(k1) });
  });

  it('a new key not yet in sa.pub (killed between the two writes) is trust-next again, with that key kept', async () => {
    const [k0, k1] = [await newKey(), await newKey()];
    assert.deepEqual(saRotationPhase(files(k0, await pubOf(k0), k1)), { phase: 'trust-next', signing: kid(k0) });
  });

  it('refuses files something else changed, naming them', async () => {
    const [k0, k1] = [await newKey(), await newKey()];
    const refused = (f: SaFiles, why: RegExp) =>
      assert.throws(() => saRotationPhase(f), (e: unknown) => e instanceof PkiError && e.code === 'pki-sa-rotation' && e.badInput && why.test(e.why) && e.what.includes('/pki/sa.key'));
    refused(files(k0, await pubOf(k1)), /does not hold the public key of \/pki\/sa\.key/);
    refused(files(undefined, await pubOf(k0)), /\/pki\/sa\.key is missing/);
    refused(files(k0, undefined), /\/pki\/sa\.pub is missing/);
    assert.throws(() => saRotationPhase(files(k0, 'not a key')), (e: unknown) => e instanceof PkiError && e.code === 'pki-bad-key' && e.what === '/pki/sa.pub');
  });
});

describe('jwtKeyId', () => {
  it("reads the header's kid only", () => {
    const jwt = `${Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'abc-_' })).toString('base64url')}.e30.sig`;
    assert.equal(jwtKeyId(jwt), 'abc-_');
    assert.equal(jwtKeyId('not a jwt'), undefined);
    assert.equal(jwtKeyId(`${Buffer.from('{"alg":"none"}').toString('base64url')}.e30.`), undefined);
  });
});
