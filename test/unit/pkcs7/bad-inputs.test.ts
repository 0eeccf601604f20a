import { randomBytes } from 'node:crypto';
import { AppError } from '../../../shared/errors/index.ts';
import { analyzePkcs7, convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import type { KeyResolver } from '../../../shared/pkcs7/index.ts';
import { OpenSslDir, chunked, makeKey, resolverFor } from '../../../support/fixtures/pkcs7.ts';
import type { TestKey } from '../../../support/fixtures/pkcs7.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let ssl: OpenSslDir;
let keys: Record<string, TestKey>;
let resolver: KeyResolver;
let data: Buffer;

beforeAll(() => {
  ssl = new OpenSslDir();
  keys = {
    rsa: makeKey(ssl, 'rsa', 'rsa-2048'),
    other: makeKey(ssl, 'other', 'rsa-2048'),
    ec: makeKey(ssl, 'ec', 'ec-p256'),
  };
  resolver = resolverFor(Object.values(keys));
  data = randomBytes(2000);
  ssl.write('data.bin', data);
});

afterAll(() => ssl.cleanup());

const signed = (args: string[] = []) =>
  cms.sign(ssl, 'data.bin', {
    by: keys.rsa,
    detached: false,
    binary: true,
    outform: 'DER',
    extra: args,
  });
const enveloped = (args: string[] = ['-aes-256-cbc']) =>
  cms.encrypt(ssl, 'data.bin', { to: keys.rsa, binary: true, outform: 'DER', extra: args });

/** Runs a whole conversion: the promise and the body; resolves with the body size or rejects. */
async function convertAll(
  file: Buffer,
  opts: { resolver?: KeyResolver; metadata?: object; chunk?: number } = {},
): Promise<{ bytes: number; text: string }> {
  const r = await convertPkcs7ToJose(chunked(file, opts.chunk ?? 512), {
    metadata: opts.metadata ?? {},
    resolver: opts.resolver ?? resolver,
  });
  const parts: Buffer[] = [];
  for await (const c of r.body) parts.push(c);
  const all = Buffer.concat(parts);
  return { bytes: all.length, text: all.toString('latin1') };
}

/** Like convertAll but keeps what the body yielded before it failed. */
async function convertUntilError(file: Buffer): Promise<{ error: AppError; text: string }> {
  const r = await convertPkcs7ToJose(chunked(file, 512), { metadata: {}, resolver });
  const parts: Buffer[] = [];
  try {
    for await (const c of r.body) parts.push(c);
  } catch (error) {
    return { error: error as AppError, text: Buffer.concat(parts).toString('latin1') };
  }
  throw new Error('the body did not fail');
}

describe('bad inputs', () => {
  it('when the input is empty, then cms-malformed', async () => {
    await expect(convertAll(Buffer.alloc(0))).rejects.toMatchObject({
      code: 'cms_malformed',
      status: 400,
      message: 'the input is empty',
    });
    await expect(analyzePkcs7(chunked(Buffer.alloc(0), 1))).rejects.toMatchObject({
      code: 'cms_malformed',
    });
  });

  it('when the input is an X.509 certificate, then cms-malformed saying it is not a ContentInfo', async () => {
    await expect(convertAll(keys.rsa.certificate)).rejects.toMatchObject({
      code: 'cms_malformed',
      message: expect.stringMatching(/not a CMS ContentInfo/),
    });
  });

  it('when the input is random bytes, then every attempt ends in a 4xx problem', async () => {
    for (let i = 0; i < 200; i++) {
      const junk = randomBytes(1 + (i % 300));
      if (i % 2) junk[0] = 0x30;
      const err = await convertAll(junk).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBeGreaterThanOrEqual(400);
      expect((err as AppError).status).toBeLessThan(500);
    }
  });

  it('when a SignedData is truncated at any byte, then a problem, never a result or a hang', async () => {
    const file = signed();
    for (let n = 0; n < file.length; n += 7) {
      await expect(convertAll(file.subarray(0, n), { chunk: 100 })).rejects.toMatchObject({
        code: expect.stringMatching(/^cms_(truncated|malformed)$/),
      });
    }
  });

  it('when an EnvelopedData is truncated at any byte, then a problem and never the closing delimiter', async () => {
    const file = enveloped(['-aes-256-cbc', '-stream']);
    for (let n = 0; n < file.length; n += 5) {
      await expect(convertAll(file.subarray(0, n), { chunk: 64 })).rejects.toMatchObject({
        code: expect.stringMatching(/^cms_(truncated|malformed)$/),
      });
    }
  });

  it('when the outer length is 2^62, then cms-malformed', async () => {
    const file = Buffer.concat([Buffer.from('3088400000000000000006092a864886f70d010702', 'hex')]);
    await expect(convertAll(file)).rejects.toMatchObject({
      code: 'cms_malformed',
      message: expect.stringMatching(/2\^53/),
    });
  });

  it('when a length field is larger than the input, then cms-truncated', async () => {
    const file = Buffer.from('30847fffffff06092a864886f70d010702a0847fffffe0', 'hex');
    await expect(convertAll(file)).rejects.toMatchObject({ code: 'cms_truncated' });
  });

  it('when hundreds of indefinite lengths nest, then cms-malformed from the depth limit', async () => {
    const inner = Buffer.concat([...Array(500).fill(Buffer.from('3080', 'hex'))]);
    const file = Buffer.concat([
      Buffer.from('308006092a864886f70d010702a080308002010131', 'hex'),
      Buffer.from('80', 'hex'),
      inner,
    ]);
    await expect(convertAll(file)).rejects.toMatchObject({
      code: 'cms_malformed',
      message: expect.stringMatching(/nesting/),
    });
  });

  it('when the message has several signers, then every one is verified and the JWS has one signature per signer key', async () => {
    const file = cms.sign(ssl, 'data.bin', {
      by: [keys.rsa, keys.ec],
      binary: true,
      detached: false,
      outform: 'DER',
    });
    const out = JSON.parse((await convertAll(file)).text) as {
      signatures: Array<{ protected: string }>;
    };
    expect(out.signatures).toHaveLength(2);
    for (const sig of out.signatures) {
      const header = JSON.parse(Buffer.from(sig.protected, 'base64url').toString());
      expect(header.kw_signers).toHaveLength(2);
    }
  });

  it('when the message has several recipients and none is held, then cms-key-not-imported', async () => {
    const file = cms.encrypt(ssl, 'data.bin', {
      to: [keys.rsa, keys.other],
      cipher: 'aes-256-cbc',
      binary: true,
      outform: 'DER',
    });
    await expect(convertAll(file, { resolver: resolverFor([keys.ec]) })).rejects.toMatchObject({
      code: 'cms_key_not_imported',
    });
  });

  it('when the message is a DigestedData, then cms-unsupported', async () => {
    const file = ssl.run([
      'cms',
      '-digest_create',
      '-binary',
      '-in',
      'data.bin',
      '-outform',
      'DER',
    ]);
    await expect(convertAll(file)).rejects.toMatchObject({
      code: 'cms_unsupported',
      message: expect.stringMatching(/digestedData/),
    });
  });

  it('when the signer key is not imported, then cms-key-not-imported (404) before any body byte', async () => {
    await expect(convertAll(signed(), { resolver: resolverFor([]) })).rejects.toMatchObject({
      code: 'cms_key_not_imported',
      status: 404,
    });
  });

  it('when the recipient key is not imported, then cms-key-not-imported is thrown by convert itself', async () => {
    await expect(
      convertPkcs7ToJose(chunked(enveloped(), 512), {
        metadata: {},
        resolver: resolverFor([keys.other]),
      }),
    ).rejects.toMatchObject({ code: 'cms_key_not_imported' });
  });

  it('when a named kid does not exist, then cms-key-not-imported names it', async () => {
    await expect(
      convertAll(enveloped(), { metadata: { targetKid: 'nope' } }),
    ).rejects.toMatchObject({
      code: 'cms_key_not_imported',
      message: expect.stringMatching(/nope/),
    });
  });

  it('when the content was altered, then cms-signature-invalid (422)', async () => {
    const file = signed();
    const i = file.indexOf(data.subarray(0, 32));
    file[i + 100] ^= 1;
    await expect(convertAll(file)).rejects.toMatchObject({
      code: 'cms_signature_invalid',
      status: 422,
    });
  });

  it('when the signature bytes were altered, then cms-signature-invalid', async () => {
    const file = signed(['-noattr']);
    file[file.length - 10] ^= 1;
    await expect(convertAll(file)).rejects.toMatchObject({ code: 'cms_signature_invalid' });
  });

  it('when the CBC padding is broken, then the body fails with the one decryption-failed and never closes', async () => {
    const file = enveloped();
    // The last byte of the next-to-last block XORs into the padding byte: 0x80 makes it invalid.
    file[file.length - 17] ^= 0x80;
    const { error, text } = await convertUntilError(file);
    expect(error).toMatchObject({
      code: 'decryption_failed',
      status: 400,
      message: 'the content could not be decrypted',
    });
    expect(text).toContain('Content-Type: application/octet-stream');
    expect(text).not.toMatch(/--\r\n$/);
  });

  it('when the CBC padding is broken and preserve is asked, then the body fails before the tag', async () => {
    const file = enveloped();
    file[file.length - 17] ^= 0x80;
    await expect(
      convertAll(file, { metadata: { contentEncryption: 'preserve' } }),
    ).rejects.toMatchObject({ code: 'decryption_failed' });
  });

  it('when the GCM ciphertext was altered, then the body fails with the one decryption-failed and never closes', async () => {
    const file = enveloped(['-aes-256-gcm']);
    file[file.length - 40] ^= 1;
    const { error, text } = await convertUntilError(file);
    expect(error.code).toBe('decryption_failed');
    expect(text).not.toMatch(/--\r\n$/);
  });

  it('when the recipient key is the wrong RSA key, then decryption-failed and nothing says why', async () => {
    const wrong: KeyResolver = {
      byCmsRef: async () => ({
        kid: 'x',
        version: 1,
        type: 'rsa-2048',
        privateKey: keys.other.privateKey,
      }),
      byKid: async () => null,
    };
    await expect(convertAll(enveloped(), { resolver: wrong })).rejects.toMatchObject({
      code: 'decryption_failed',
    });
  });

  it('when the metadata asks for an unknown contentEncryption, then cms-bad-metadata', async () => {
    await expect(
      convertAll(enveloped(), { metadata: { contentEncryption: 'A512GCM' } }),
    ).rejects.toMatchObject({ code: 'cms_bad_metadata', status: 400 });
  });

  it('when a detached SignedData comes without its content, then cms-bad-metadata', async () => {
    const file = cms.sign(ssl, 'data.bin', { by: keys.rsa, binary: true, outform: 'DER' });
    await expect(convertAll(file)).rejects.toMatchObject({ code: 'cms_bad_metadata' });
  });

  it('when data follows the message, then cms-malformed', async () => {
    await expect(convertAll(Buffer.concat([signed(), Buffer.from([0])]))).rejects.toMatchObject({
      code: 'cms_malformed',
      message: expect.stringMatching(/after the end/),
    });
  });
});
