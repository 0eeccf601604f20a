import { randomBytes } from 'node:crypto';
import { FlattenedEncrypt } from 'jose';
import { ENCS, cbcHsTag, preservingEnc } from '../../../shared/jose/jwe.ts';

describe('the streaming JWE pieces', () => {
  // One tag computation serves the CMS pass-through writer and the re-encrypter's check; the jose
  // library is the independent implementation it must agree with.
  it.each(['A128CBC-HS256', 'A192CBC-HS384', 'A256CBC-HS512'] as const)(
    'when %s content is tagged in pieces, then the tag is the one the jose library writes',
    async (enc) => {
      const spec = ENCS.get(enc)!;
      const key = randomBytes(spec.cek);
      const jwe = await new FlattenedEncrypt(randomBytes(1000))
        .setProtectedHeader({ alg: 'dir', enc })
        .encrypt(key);
      const aad = Buffer.from(jwe.protected!, 'ascii');
      const ct = Buffer.from(jwe.ciphertext, 'base64url');
      const mac = cbcHsTag(
        spec.cbc!.hash,
        key.subarray(0, spec.cek / 2),
        aad,
        Buffer.from(jwe.iv!, 'base64url'),
      );
      for (let at = 0; at < ct.length; at += 333) mac.update(ct.subarray(at, at + 333));
      expect(mac.tag().toString('base64url')).toBe(jwe.tag);
    },
  );

  it('when a CMS AES key is kept, then the enc is the AnCBC-HSm of its size, from the same table', () => {
    expect([16, 24, 32].map(preservingEnc)).toEqual([
      'A128CBC-HS256',
      'A192CBC-HS384',
      'A256CBC-HS512',
    ]);
    for (const enc of ['A128CBC-HS256', 'A192CBC-HS384', 'A256CBC-HS512'])
      expect(ENCS.get(enc)!.tag).toBe(ENCS.get(enc)!.cek / 2);
  });

  it('when the header names an enc that is an Object.prototype member, then the table does not find it', () => {
    expect(ENCS.has('constructor')).toBe(false);
  });
});
