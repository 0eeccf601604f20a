/**
 * Triple-DES key wrap (RFC 3217, id-alg-CMS3DESwrap) for key agreement and KEK recipients:
 * `openssl cms -encrypt -des3` to an EC recipient writes it (with the wrap's NULL parameters in
 * the KDF's shared info); the KEK form, which the OpenSSL CLI cannot write, is an OpenSSL KEK
 * message whose AES-wrapped key is re-wrapped with OpenSSL's own des3-wrap. Results are opened
 * with jose; a tampered wrapped key is the opaque decryption failure.
 */
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { flattenedDecrypt } from 'jose';
import { analyzePkcs7, convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import { des3KeyUnwrap } from '../../../shared/crypto/des3-kw.ts';
import {
  OpenSslDir,
  children,
  chunked,
  collect,
  der,
  makeKey,
  makeSecret,
  parseMultipart,
  resolverFor,
  valueOf,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey, TestSecret } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';

const DES3_WRAP = '1.2.840.113549.1.9.16.3.6';
let ssl: OpenSslDir;
let keys: Record<'p256' | 'p384' | 'p521', TestKey>;
let kek: TestSecret;
const data = randomBytes(70_001);

beforeAll(() => {
  ssl = new OpenSslDir();
  keys = {
    p256: makeKey(ssl, 'kw-p256', 'ec-p256'),
    p384: makeKey(ssl, 'kw-p384', 'ec-p384'),
    p521: makeKey(ssl, 'kw-p521', 'ec-p521'),
  };
  kek = makeSecret('kek-3des', 24);
  ssl.write('data.bin', data);
});

afterAll(() => ssl.cleanup());

async function open(file: Buffer, key: KeyObject): Promise<Buffer> {
  const r = await convertPkcs7ToJose(chunked(file, 4096), {
    metadata: {},
    resolver: resolverFor(Object.values(keys), [kek]),
  });
  const { parts, closed } = parseMultipart(await collect(r.body), r.contentType);
  expect(closed).toBe(true);
  const jwe = JSON.parse(parts[0].body.toString());
  const ct = parts[1].body;
  const { plaintext } = await flattenedDecrypt(
    {
      protected: jwe.protected,
      header: jwe.recipients[0].header,
      encrypted_key: jwe.recipients[0].encrypted_key,
      iv: jwe.iv,
      ciphertext: ct.subarray(0, ct.length - 16).toString('base64url'),
      tag: ct.subarray(ct.length - 16).toString('base64url'),
    },
    key,
  );
  return Buffer.from(plaintext);
}

const encryptTo = (cert: string, args: string[]) =>
  cms.encrypt(ssl, 'data.bin', {
    to: { certFile: cert },
    binary: true,
    outform: 'DER',
    extra: args,
  });

/** An OpenSSL KEK message (aes192-wrap) with its key re-wrapped under 3DES wrap by OpenSSL. */
function kekMessage(): Buffer {
  const msg = cms.encrypt(ssl, 'data.bin', { kek, cipher: 'des3', binary: true, outform: 'DER' });
  const [type, explicit] = children(msg);
  const [version, recipients, eci] = children(children(explicit)[0]);
  const [riVersion, kekid, , encryptedKey] = children(children(recipients)[0]);
  const unwrap = createDecipheriv(
    'id-aes192-wrap',
    kek.secret,
    Buffer.from('a6a6a6a6a6a6a6a6', 'hex'),
  );
  const cek = Buffer.concat([unwrap.update(valueOf(encryptedKey)), unwrap.final()]);
  const wrap = createCipheriv('des3-wrap', kek.secret, null);
  const wrapped = Buffer.concat([wrap.update(cek), wrap.final()]);
  const kekri = der.tlv(
    0xa2,
    Buffer.concat([
      riVersion,
      kekid,
      der.seq(der.oid(DES3_WRAP), Buffer.from([0x05, 0x00])),
      der.octets(wrapped),
    ]),
  );
  return der.seq(type, der.explicit(0, der.seq(version, der.set(kekri), eci)));
}

describe('when a CMS EnvelopedData wraps its key with Triple-DES (RFC 3217)', () => {
  it.each(['p256', 'p384', 'p521'] as const)(
    'then openssl cms -encrypt -des3 to an EC %s recipient converts and jose opens the JWE',
    async (curve) => {
      const file = encryptTo(keys[curve].certFile, ['-des3']);
      expect((await open(file, keys[curve].privateKey)).equals(data)).toBe(true);
    },
  );

  it('then an EC recipient with -des3-wrap around AES-256 content converts too', async () => {
    const file = encryptTo(keys.p256.certFile, ['-aes256', '-des3-wrap']);
    expect((await open(file, keys.p256.privateKey)).equals(data)).toBe(true);
  });

  it('then a KEK recipient with the 3DES wrap converts, and the analyzer names the wrap', async () => {
    const file = kekMessage();
    expect((await open(file, createSecretKey(kek.secret))).equals(data)).toBe(true);
    const a = await analyzePkcs7(chunked(file, 1000), resolverFor([], [kek]));
    expect(a).toMatchObject({
      convertible: true,
      recipients: [
        {
          type: 'kek',
          keyEncryptionAlgorithm: { oid: DES3_WRAP, name: 'id-alg-CMS3DESwrap' },
          kid: 'kek-3des',
        },
      ],
    });
  });

  it('then a tampered wrapped key is decryption-failed, and a wrong length too', async () => {
    const file = kekMessage();
    // The wrapped key is the last 40 bytes of the recipient info: flip one of them.
    const at = file.indexOf(Buffer.from([0x04, 40])) + 10;
    file[at] ^= 0x01;
    await expect(open(file, createSecretKey(kek.secret))).rejects.toMatchObject({
      code: 'decryption_failed',
    });
    expect(() => des3KeyUnwrap(kek.secret, randomBytes(36))).toThrow(RangeError);
    expect(() => des3KeyUnwrap(kek.secret, randomBytes(56))).toThrow(RangeError);
    expect(() => des3KeyUnwrap(randomBytes(16), randomBytes(40))).toThrow(RangeError);
  });
});
