import { randomBytes } from 'node:crypto';
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
import { cms, type CmsCipher } from '../../../support/fixtures/cms.ts';

let ssl: OpenSslDir;
let archive: TestKey;
let data: Buffer;

beforeAll(() => {
  ssl = new OpenSslDir();
  archive = makeKey(ssl, 'archive-p256', 'ec-p256');
  data = randomBytes(30_000);
  ssl.write('data.bin', data);
});

afterAll(() => ssl.cleanup());

/** What `openssl cms -encrypt -pwri_password` writes: PBKDF2 then id-alg-PWRI-KEK (RFC 3211). */
const pwri = (password: string, cipher: CmsCipher, to: TestKey[] = []) =>
  cms.encrypt(ssl, 'data.bin', { password, cipher, to, binary: true, outform: 'DER' });

async function convert(file: Buffer, metadata: ConvertMetadata): Promise<Buffer> {
  const result = await convertPkcs7ToJose(chunked(file, 4096), {
    metadata,
    resolver: resolverFor([archive]),
  });
  const { parts } = parseMultipart(await collect(result.body), result.contentType);
  const header = JSON.parse(parts[0].body.toString());
  const body = parts[1].body;
  const { plaintext } = await generalDecrypt(
    {
      ...header,
      ciphertext: body.subarray(0, body.length - 16).toString('base64url'),
      tag: body.subarray(body.length - 16).toString('base64url'),
    },
    archive.privateKey,
  );
  return Buffer.from(plaintext);
}

async function failureOf(file: Buffer, metadata: ConvertMetadata) {
  const result = await convertPkcs7ToJose(chunked(file, 4096), {
    metadata,
    resolver: resolverFor([archive]),
  });
  const err = (await collect(result.body).then(
    () => null,
    (e: unknown) => e,
  )) as { code: string; status: number; message: string } | null;
  return err && { code: err.code, status: err.status, message: err.message };
}

describe('password recipients (RFC 3211)', () => {
  it.each(['aes-256-cbc', 'aes-128-cbc', 'des3'] as const)(
    'when the password is right (%s), then the target opens the JWE',
    async (cipher) => {
      const out = await convert(pwri('correct horse', cipher), {
        password: 'correct horse',
        targetKid: 'archive-p256',
      });
      expect(out.equals(data)).toBe(true);
    },
  );

  it('when a file has a certificate recipient and a password one, then the password opens it', async () => {
    const other = makeKey(ssl, 'other-rsa', 'rsa-2048');
    const file = pwri('s3cret', 'aes-256-cbc', [other]);
    expect(await convert(file, { password: 's3cret', targetKid: 'archive-p256' })).toEqual(data);
  });

  it('when the password is wrong, then the one decryption-failed, as a damaged content', async () => {
    const file = pwri('right', 'aes-256-cbc');
    const wrong = await failureOf(file, { password: 'wrong', targetKid: 'archive-p256' });
    const damaged = withBadPadding(file);
    const bad = await failureOf(damaged, { password: 'right', targetKid: 'archive-p256' });
    expect(wrong?.code).toBe('decryption_failed');
    expect(wrong).toEqual(bad);
    expect(JSON.stringify(wrong)).not.toContain('wrong');
  });

  it('when no targetKid is given, then cms-bad-metadata (a password cannot receive the JWE)', async () => {
    await expect(convert(pwri('p', 'aes-256-cbc'), { password: 'p' })).rejects.toMatchObject({
      code: 'cms_bad_metadata',
    });
  });

  it('when a password is given for a file without a password recipient, then cms-bad-metadata', async () => {
    const file = cms.encrypt(ssl, 'data.bin', { to: archive, binary: true, outform: 'DER' });
    await expect(convert(file, { password: 'p', targetKid: 'archive-p256' })).rejects.toMatchObject(
      { code: 'cms_bad_metadata' },
    );
  });

  it('when analyzed, then a password recipient is named and convertible', async () => {
    const a = await analyzePkcs7(chunked(pwri('p', 'aes-256-cbc'), 500), resolverFor([]));
    expect(a.recipients).toEqual([
      expect.objectContaining({
        type: 'password',
        keyEncryptionAlgorithm: { oid: '1.2.840.113549.1.9.16.3.9', name: 'PWRI-KEK' },
      }),
    ]);
    expect(a.convertible).toBe(true);
  });
});
