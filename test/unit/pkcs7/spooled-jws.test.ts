/**
 * The JWS signer of SignedData conversions (shared/jose/spooled-jws.ts): content past the memory
 * threshold goes to the spool file and comes back whole, under a header known only at the end;
 * one key gives the flattened form, several the General JSON form. Checked with jose.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { flattenedVerify } from 'jose';
import { SPOOL_MEMORY, SpooledJwsSigner } from '../../../shared/jose/spooled-jws.ts';
import type { ResolvedKey } from '../../../shared/jose/types.ts';

function key(kid: string, type: 'ec' | 'ed25519'): ResolvedKey {
  const { privateKey, publicKey } =
    type === 'ec'
      ? generateKeyPairSync('ec', { namedCurve: 'P-384' })
      : generateKeyPairSync('ed25519');
  return { kid, version: 1, type: type === 'ec' ? 'ec-p384' : 'ed25519', privateKey, publicKey };
}

const content = randomBytes(2 * SPOOL_MEMORY + 12_345);

async function spool(b64: boolean): Promise<SpooledJwsSigner> {
  const s = new SpooledJwsSigner({ b64 });
  // Reused buffers, as the BER reader hands them on: the spool must copy or write before the next.
  const buf = Buffer.alloc(64 * 1024);
  for (let i = 0; i < content.length; i += buf.length) {
    const n = content.copy(buf, 0, i, Math.min(content.length, i + buf.length));
    await s.update(buf.subarray(0, n));
  }
  return s;
}

describe('SpooledJwsSigner', () => {
  it('when the content is larger than the memory threshold, then the JWS (b64 false and true) verifies with jose over it', async () => {
    const k = key('spool-ec', 'ec');
    for (const b64 of [false, true]) {
      const jws = (await (await spool(b64)).finish([{ key: k, alg: 'ES384' }], { note: 1 })) as {
        protected: string;
        signature: string;
      };
      const r = await flattenedVerify(
        { ...jws, payload: b64 ? content.toString('base64url') : content },
        k.publicKey!,
      );
      expect(r.protectedHeader).toMatchObject({ alg: 'ES384', kid: 'spool-ec#1', note: 1 });
    }
  });

  it('when the content spans several write buffers in odd chunks, then it comes back whole and in order', async () => {
    // Past the two alternating 1 MiB write buffers several times, in chunks that never align.
    const big = randomBytes(5 * 1024 * 1024 + 7);
    const s = new SpooledJwsSigner({ b64: false });
    for (let i = 0; i < big.length; i += 100_003)
      await s.update(big.subarray(i, Math.min(big.length, i + 100_003)));
    const k = key('spool-big', 'ec');
    const jws = (await s.finish([{ key: k, alg: 'ES384' }], {})) as {
      protected: string;
      signature: string;
    };
    await flattenedVerify({ ...jws, payload: big }, k.publicKey!);
  });

  it('when two keys sign, then the General JSON form has one signature each, both verifying', async () => {
    const a = key('spool-a', 'ec');
    const b = key('spool-b', 'ed25519');
    const s = await spool(false);
    const out = (await s.finish(
      [
        { key: a, alg: 'ES384' },
        { key: b, alg: 'EdDSA' },
      ],
      {},
    )) as { signatures: Array<{ protected: string; signature: string }> };
    expect(out.signatures).toHaveLength(2);
    await flattenedVerify({ ...out.signatures[0], payload: content }, a.publicKey!);
    await flattenedVerify({ ...out.signatures[1], payload: content }, b.publicKey!);
    await s.close(); // idempotent after finish
    await expect(s.update(Buffer.from('late'))).rejects.toThrow(/closed/);
  });
});
