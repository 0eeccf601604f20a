import { createDecipheriv, createSecretKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { GeneralEncrypt, generalDecrypt } from 'jose';
import type { AppError } from '../../../shared/errors/index.ts';
import { gcmEncryptor, protectedHeader } from '../../../shared/jose/jwe.ts';
import {
  defaultKeyManagement,
  recipientDerivedKey,
  unwrapContentKey,
  wrapContentKey,
} from '../../../shared/jose/keys.ts';
import type { ResolvedKey } from '../../../shared/jose/types.ts';

function asymmetric(
  type: 'rsa' | 'ec',
  opts: { modulusLength?: number; namedCurve?: string },
): ResolvedKey {
  const { privateKey, publicKey } =
    type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: opts.modulusLength! })
      : generateKeyPairSync('ec', { namedCurve: opts.namedCurve! });
  return { kid: `k-${type}`, version: 2, type, privateKey, publicKey };
}
const aes = (bytes: number): ResolvedKey => ({
  kid: 'k-aes',
  version: 1,
  type: `aes-${bytes * 8}`,
  secretKey: createSecretKey(randomBytes(bytes)),
});

function thrown(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    return err as AppError;
  }
  throw new Error('nothing thrown');
}

const rsa = asymmetric('rsa', { modulusLength: 2048 });
const KEYS: [string, ResolvedKey, string][] = [
  ['RSA-OAEP-256', rsa, 'RSA-OAEP-256'],
  ['RSA-OAEP', rsa, 'RSA-OAEP'],
  ['ECDH-ES+A256KW on P-256', asymmetric('ec', { namedCurve: 'P-256' }), 'ECDH-ES+A256KW'],
  ['ECDH-ES+A128KW on P-384', asymmetric('ec', { namedCurve: 'P-384' }), 'ECDH-ES+A128KW'],
  ['ECDH-ES+A192KW on P-521', asymmetric('ec', { namedCurve: 'P-521' }), 'ECDH-ES+A192KW'],
  ['A128KW', aes(16), 'A128KW'],
  ['A256KW', aes(32), 'A256KW'],
];

describe('JOSE key management: one table for the writer and the reader', () => {
  it.each(KEYS)(
    'when the content key is wrapped with %s, then unwrapContentKey and the jose library both open the JWE',
    async (_, key, alg) => {
      const aad = Buffer.from(protectedHeader('A256GCM'), 'ascii');
      const enc = gcmEncryptor('A256GCM', aad);
      const recipient = wrapContentKey(key, enc.cek, alg);
      expect(recipient.header).toMatchObject({ alg, kid: `${key.kid}#${key.version}` });
      expect(
        unwrapContentKey(
          key,
          recipient.header,
          Buffer.from(recipient.encrypted_key, 'base64url'),
          32,
        ),
      ).toEqual(enc.cek);

      const plaintext = Buffer.from('streamed content');
      const head = enc.update(plaintext);
      const fin = enc.final();
      const jwe = {
        protected: aad.toString('ascii'),
        recipients: [recipient],
        iv: enc.iv.toString('base64url'),
        ciphertext: Buffer.concat([head, fin.rest]).toString('base64url'),
        tag: fin.tag.toString('base64url'),
      };
      const opened = await generalDecrypt(jwe, key.privateKey ?? key.secretKey!.export(), {
        keyManagementAlgorithms: [alg],
      });
      expect(Buffer.from(opened.plaintext)).toEqual(plaintext);
    },
  );

  it('when no alg is asked for, then the default follows the key: A<n>KW, RSA-OAEP-256, ECDH-ES+A256KW', () => {
    expect(defaultKeyManagement(aes(24))).toBe('A192KW');
    expect(defaultKeyManagement(rsa)).toBe('RSA-OAEP-256');
    expect(defaultKeyManagement(KEYS[2][1])).toBe('ECDH-ES+A256KW');
  });

  // Regression: the writer's copy agreed on any curve OpenSSL knows and wrote an epk no JOSE
  // reader accepts; RFC 7518 section 4.6 names P-256, P-384 and P-521, as the reader does.
  it('when the target is an EC key on a curve JOSE does not name, then cms-key-unusable before anything is written', () => {
    const k1 = asymmetric('ec', { namedCurve: 'secp256k1' });
    expect(thrown(() => wrapContentKey(k1, randomBytes(32), 'ECDH-ES+A256KW'))).toMatchObject({
      code: 'cms_key_unusable',
    });
  });

  it('when the wrapped key is empty, cut or altered, then a random key of the right length stands in (the failure surfaces at the tag, as any other)', () => {
    const key = aes(16);
    const cek = randomBytes(32);
    const rec = wrapContentKey(key, cek, 'A128KW');
    const altered = Buffer.from(rec.encrypted_key, 'base64url');
    altered[3] ^= 1;
    for (const ek of [
      Buffer.alloc(0),
      Buffer.from(rec.encrypted_key, 'base64url').subarray(0, 32),
      altered,
    ]) {
      const a = unwrapContentKey(key, rec.header, ek, 32);
      const b = unwrapContentKey(key, rec.header, ek, 32);
      expect(a).toHaveLength(32);
      expect(a.equals(cek) || a.equals(b)).toBe(false);
    }
    // A wrapped key of another length than enc needs: a random key too.
    const short = wrapContentKey(key, randomBytes(16), 'A128KW');
    const c = unwrapContentKey(
      key,
      short.header,
      Buffer.from(short.encrypted_key, 'base64url'),
      32,
    );
    expect(c).toHaveLength(32);
  });

  it('when the header names an alg that is an Object.prototype member, then unsupported rather than a lookup on it', () => {
    expect(
      thrown(() => unwrapContentKey(aes(16), { alg: 'constructor' }, Buffer.alloc(40), 32)),
    ).toMatchObject({ code: 'jose_unsupported' });
  });

  // Regression: the stream re-encrypter's copy of ECDH-ES left apu/apv out of the Concat KDF (the
  // compact reader's copy had them), so a JWE another library wrote with them never opened.
  it('when another library wraps with ECDH-ES+A128KW and apu/apv, then the recipient derives the same key', async () => {
    const key = asymmetric('ec', { namedCurve: 'P-256' });
    const jwe = await new GeneralEncrypt(Buffer.from('x'))
      .setProtectedHeader({ enc: 'A128GCM' })
      .addRecipient(key.publicKey!)
      .setUnprotectedHeader({ alg: 'ECDH-ES+A128KW' })
      .setKeyManagementParameters({ apu: Buffer.from('Alice'), apv: Buffer.from('Bob') })
      .encrypt();
    const r = jwe.recipients[0];
    // The re-encrypter reads the protected header and the recipient's together (RFC 7516 section 7.2.1).
    const header = {
      ...JSON.parse(Buffer.from(jwe.protected!, 'base64url').toString('utf8')),
      ...r.header,
    };
    expect(header).toMatchObject({ alg: 'ECDH-ES+A128KW', apu: 'QWxpY2U', apv: 'Qm9i' });
    const cek = unwrapContentKey(key, header, Buffer.from(r.encrypted_key!, 'base64url'), 16);
    // The content key opens the content: the tag checks under it.
    const d = createDecipheriv('aes-128-gcm', cek, Buffer.from(jwe.iv!, 'base64url'));
    d.setAAD(Buffer.from(jwe.protected!, 'ascii'));
    d.setAuthTag(Buffer.from(jwe.tag!, 'base64url'));
    expect(
      Buffer.concat([d.update(Buffer.from(jwe.ciphertext, 'base64url')), d.final()]).toString(),
    ).toBe('x');
  });

  it('when apu is not base64url text, then the derivation refuses it', () => {
    const key = asymmetric('ec', { namedCurve: 'P-256' });
    const { epk } = wrapContentKey(key, randomBytes(32), 'ECDH-ES+A256KW').header;
    expect(() =>
      recipientDerivedKey(key.privateKey!, 'P-256', { epk, apu: 42 }, 'ECDH-ES+A256KW', 256),
    ).toThrow('apu is not base64url');
    expect(() =>
      recipientDerivedKey(key.privateKey!, 'P-256', { epk, apv: 'a+b' }, 'ECDH-ES+A256KW', 256),
    ).toThrow('apv is not base64url');
  });
});
