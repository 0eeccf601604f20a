import { createPrivateKey, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { generalDecrypt } from 'jose';
import { analyzePkcs7, convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import type { ConvertMetadata } from '../../../shared/pkcs7/index.ts';
import {
  OpenSslDir,
  chunked,
  collect,
  makeKey,
  parseMultipart,
  resolverFor,
} from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';
import { withBadPadding } from '../../support/damage.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let ssl: OpenSslDir;
let keys: Record<string, TestKey>;
let data: Buffer;
let twoRecipients: Buffer;

beforeAll(() => {
  ssl = new OpenSslDir();
  keys = {
    rsa: makeKey(ssl, 'mail-rsa', 'rsa-2048'),
    p256: makeKey(ssl, 'mail-p256', 'ec-p256'),
    archive: makeKey(ssl, 'archive-p384', 'ec-p384'),
    signer: makeKey(ssl, 'signer-ed25519', 'ed25519'),
    rsa2: makeKey(ssl, 'other-rsa', 'rsa-2048'),
  };
  data = randomBytes(40_000);
  ssl.write('data.bin', data);
  // What a mail client writes: one copy of the key for each recipient, in this order.
  twoRecipients = encryptTo(['rsa', 'p256']);
});

afterAll(() => ssl.cleanup());

function encryptTo(names: string[], extra: string[] = []): Buffer {
  return cms.encrypt(ssl, 'data.bin', {
    to: names.map((n) => keys[n]),
    cipher: 'aes-256-cbc',
    binary: true,
    outform: 'DER',
    extra,
  });
}

const TAG = 16;

async function convert(file: Buffer, metadata: ConvertMetadata, held: string[]) {
  // Which key decrypted: the one whose decryption the engine reports as succeeded.
  const decrypted: string[] = [];
  const resolver = {
    ...resolverFor(held.map((n) => keys[n])),
    decryptionSucceeded: async (kid: string) => void decrypted.push(kid),
  };
  const result = await convertPkcs7ToJose(chunked(file, 8192), { metadata, resolver });
  const { parts, closed } = parseMultipart(await collect(result.body), result.contentType);
  expect(closed).toBe(true);
  const header = JSON.parse(parts[0].body.toString());
  const body = parts[1].body;
  return {
    header,
    decrypted,
    /** Decrypts with jose's General JSON reader, as any JOSE client would. */
    open: async (key: KeyObject) =>
      Buffer.from(
        (
          await generalDecrypt(
            {
              protected: header.protected,
              recipients: header.recipients,
              iv: header.iv,
              ciphertext: body.subarray(0, body.length - TAG).toString('base64url'),
              tag: body.subarray(body.length - TAG).toString('base64url'),
            },
            key,
          )
        ).plaintext,
      ),
  };
}

const kidsOf = (h: { recipients: Array<{ header: { kid: string } }> }) =>
  h.recipients.map((r) => r.header.kid);

describe('several CMS recipients', () => {
  it('when the tenant holds only the second recipient, then that key decrypts', async () => {
    const out = await convert(twoRecipients, {}, ['p256']);
    expect(kidsOf(out.header)).toEqual(['mail-p256#1']);
    expect((await out.open(keys.p256.privateKey)).equals(data)).toBe(true);
  });

  it('when the tenant holds both, then the first in file order decrypts and the JWE is for both', async () => {
    const out = await convert(twoRecipients, {}, ['p256', 'rsa']);
    expect(out.decrypted).toEqual(['mail-rsa']);
    expect(kidsOf(out.header)).toEqual(['mail-rsa#1', 'mail-p256#1']);
    expect((await out.open(keys.rsa.privateKey)).equals(data)).toBe(true);
    expect((await out.open(keys.p256.privateKey)).equals(data)).toBe(true);
  });

  it('when recipientKid names the second, then it decrypts, and the JWE is still for both', async () => {
    const out = await convert(twoRecipients, { recipientKid: 'mail-p256' }, ['rsa', 'p256']);
    expect(out.decrypted).toEqual(['mail-p256']);
    expect(kidsOf(out.header)).toEqual(['mail-rsa#1', 'mail-p256#1']);
    expect((await out.open(keys.p256.privateKey)).equals(data)).toBe(true);
  });

  it('when no recipient key is held, then cms-key-not-imported names every recipient', async () => {
    await expect(convert(twoRecipients, {}, ['archive'])).rejects.toMatchObject({
      code: 'cms_key_not_imported',
      details: { identifiers: [expect.any(Object), expect.any(Object)] },
    });
  });

  it('when the chosen recipient cannot open the key, then it fails as a bad content does', async () => {
    const failure = async (file: Buffer, metadata: ConvertMetadata) => {
      const result = await convertPkcs7ToJose(chunked(file, 8192), {
        metadata,
        resolver: resolverFor([keys.rsa, keys.p256, keys.rsa2]),
      });
      const err = await collect(result.body).then(
        () => null,
        (e: unknown) => e,
      );
      const { code, status, message } = err as { code: string; status: number; message: string };
      return { code, status, message };
    };
    // A tenant RSA key no recipient names, picked by recipientKid: the RSA copy is unwrapped with it.
    const wrongKey = await failure(twoRecipients, { recipientKid: 'other-rsa' });
    const badContent = withBadPadding(twoRecipients);
    const wrongContent = await failure(badContent, {});
    expect(wrongKey).toEqual({
      code: 'decryption_failed',
      status: wrongKey.status,
      message: wrongKey.message,
    });
    expect(wrongKey).toEqual(wrongContent);
  });

  it('when recipientKid names a key of another key agreement group, then no recipient fits it, and a lone one answers cms-key-unusable', async () => {
    // An X25519 key (openssl genpkey) beside the P-256 recipient: it used to be tried on the
    // P-256 originator key and answered cms-malformed, as if the file were broken.
    const x25519: TestKey = {
      ...keys.signer,
      kid: 'mail-x25519',
      type: 'x25519',
      privateKey: createPrivateKey(ssl.run(['genpkey', '-algorithm', 'X25519'])),
    };
    const resolver = resolverFor([keys.rsa, keys.p256, keys.archive, x25519]);
    const run = (file: Buffer, recipientKid: string) =>
      convertPkcs7ToJose(chunked(file, 8192), {
        metadata: { recipientKid, targetKid: 'mail-rsa' },
        resolver,
      });
    const onlyEc = encryptTo(['p256']);
    await expect(run(twoRecipients, 'mail-x25519')).rejects.toMatchObject({
      code: 'cms_key_not_imported',
      message: 'key mail-x25519 fits none of the 2 recipients',
    });
    // A P-384 key fits no P-256 recipient either (the originator point's length says the curve).
    await expect(run(twoRecipients, 'archive-p384')).rejects.toMatchObject({
      code: 'cms_key_not_imported',
    });
    await expect(run(onlyEc, 'mail-x25519')).rejects.toMatchObject({
      code: 'cms_key_unusable',
      message: "key mail-x25519 is not a key of the recipient's key agreement",
    });
  });
});

describe('analyze of several recipients', () => {
  it('when one recipient is held, then convertible with its kid named', async () => {
    const a = await analyzePkcs7(chunked(twoRecipients, 500), resolverFor([keys.p256]));
    expect(a.recipients.map((r) => r.kid)).toEqual([null, 'mail-p256']);
    expect(a.convertible).toBe(true);
  });

  it('when none is held, then not convertible, and the reason says so', async () => {
    const a = await analyzePkcs7(chunked(twoRecipients, 500), resolverFor([keys.archive]));
    expect(a).toMatchObject({ convertible: false, reason: 'no recipient key is imported' });
  });
});

describe('targetKid as a list', () => {
  it('when two targets are named, then part 1 has one JWE recipient each and both open it', async () => {
    const out = await convert(twoRecipients, { targetKid: ['archive-p384', 'mail-rsa'] }, [
      'p256',
      'rsa',
      'archive',
    ]);
    expect(kidsOf(out.header)).toEqual(['archive-p384#1', 'mail-rsa#1']);
    expect(out.header.recipients.map((r: { header: { alg: string } }) => r.header.alg)).toEqual([
      'ECDH-ES+A256KW',
      'RSA-OAEP-256',
    ]);
    expect((await out.open(keys.archive.privateKey)).equals(data)).toBe(true);
    expect((await out.open(keys.rsa.privateKey)).equals(data)).toBe(true);
  });

  it('when preserve keeps the ciphertext, then every target still opens it', async () => {
    const result = await convertPkcs7ToJose(chunked(twoRecipients, 8192), {
      metadata: { targetKid: ['archive-p384', 'mail-p256'], contentEncryption: 'preserve' },
      resolver: resolverFor([keys.rsa, keys.p256, keys.archive]),
    });
    const { parts } = parseMultipart(await collect(result.body), result.contentType);
    const header = JSON.parse(parts[0].body.toString());
    const body = parts[1].body;
    for (const key of [keys.archive, keys.p256]) {
      const { plaintext } = await generalDecrypt(
        {
          ...header,
          ciphertext: body.subarray(0, body.length - 32).toString('base64url'),
          tag: body.subarray(body.length - 32).toString('base64url'),
        },
        key.privateKey,
      );
      expect(Buffer.from(plaintext).equals(data)).toBe(true);
    }
  });

  it.each<[string, string, unknown]>([
    ['an empty list', 'cms_bad_metadata', []],
    ['a kid twice', 'cms_bad_metadata', ['mail-rsa', 'mail-rsa']],
    ['more than 16 kids', 'cms_bad_metadata', Array.from({ length: 17 }, (_, i) => `k${i}`)],
    ['a kid that is not a string', 'cms_bad_metadata', ['mail-rsa', 7]],
    ['an unknown kid', 'cms_key_not_imported', ['mail-rsa', 'nobody']],
    ['a signing-only key type', 'cms_key_unusable', ['mail-rsa', 'signer-ed25519']],
  ])('when targetKid is %s, then %s before anything is written', async (_, code, targetKid) => {
    await expect(
      convertPkcs7ToJose(chunked(twoRecipients, 8192), {
        metadata: { targetKid } as ConvertMetadata,
        resolver: resolverFor(Object.values(keys)),
      }),
    ).rejects.toMatchObject({ code });
  });
});
