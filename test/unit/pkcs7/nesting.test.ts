/**
 * CMS content types nested past MAX_CMS_NESTING (bad input "nested content types 8
 * deep"): openssl signs (and encrypts) over its own previous output in test setup. A file past the
 * limit is refused with cms-nesting-too-deep before its content is read past the nested heads;
 * one at the limit converts and its JWS verifies with jose over the bytes the outer layer signed.
 * Found inside an encrypted layer, the same depth is a failure of the plaintext: the one
 * decryption-failed at the end of the answer, with nothing of a JWS.
 */
import { createPublicKey, randomBytes } from 'node:crypto';
import { analyzePkcs7, convertPkcs7ToJose } from '../../../shared/pkcs7/index.ts';
import { MAX_CMS_NESTING } from '../../../shared/pkcs7/nesting.ts';
import {
  OpenSslDir,
  chunked,
  collect,
  decryptJweParts,
  makeKey,
  parseMultipart,
  resolverFor,
  verifyDetached,
} from '../../../support/fixtures/pkcs7.ts';
import type { Jws, TestKey } from '../../../support/fixtures/pkcs7.ts';
import type { KeyResolver } from '../../../shared/pkcs7/index.ts';
import { cms } from '../../../support/fixtures/cms.ts';

let ssl: OpenSslDir;
let rsa: TestKey;
let resolver: KeyResolver;

/** Layers made by openssl over data.bin, innermost first: `s` signs, `e` encrypts. */
function nest(layers: string, name: string, stream = false): Buffer {
  let input = 'data.bin';
  for (let i = 0; i < layers.length; i++) {
    const out = `${name}-${i}.der`;
    const common = { binary: true, stream, outform: 'DER', out } as const;
    if (layers[i] === 's') cms.sign(ssl, input, { by: rsa, detached: false, ...common });
    else cms.encrypt(ssl, input, { to: rsa, cipher: 'aes-256-cbc', ...common });
    input = out;
  }
  return ssl.read(input);
}

/** The input as chunks, counting the bytes the converter pulled. */
function counted(file: Buffer): { input: AsyncIterable<Buffer>; pulled: () => number } {
  let pulled = 0;
  return {
    input: (async function* () {
      for await (const c of chunked(file, 4096)) {
        pulled += c.length;
        yield c;
      }
    })(),
    pulled: () => pulled,
  };
}

beforeAll(() => {
  ssl = new OpenSslDir();
  rsa = makeKey(ssl, 'nest-rsa', 'rsa-2048');
  resolver = resolverFor([rsa]);
  // Large enough that a refusal after reading it all would show in the bytes pulled.
  ssl.write('data.bin', randomBytes(2 * 1024 * 1024));
});

afterAll(() => ssl.cleanup());

describe('CMS content types nested past the limit', () => {
  it(`when a SignedData nests ${MAX_CMS_NESTING} deep, then it converts and its JWS verifies over the SignedData it carries`, async () => {
    const file = nest('s'.repeat(MAX_CMS_NESTING), 'at-limit');
    const r = await convertPkcs7ToJose(chunked(file, 4096), { metadata: {}, resolver });
    const jws = JSON.parse((await collect(r.body)).toString()) as Jws;
    await verifyDetached(
      jws,
      ssl.read(`at-limit-${MAX_CMS_NESTING - 2}.der`),
      createPublicKey(rsa.privateKey),
    );
    const a = await analyzePkcs7(chunked(file, 4096), resolver);
    expect(a).toMatchObject({ convertible: true });
  });

  it.each([
    ['8 SignedData', 's'.repeat(8), false],
    ['8 SignedData streamed (BER, indefinite lengths)', 's'.repeat(8), true],
    [`${MAX_CMS_NESTING + 1} SignedData`, 's'.repeat(MAX_CMS_NESTING + 1), false],
    ['an EnvelopedData under SignedData layers', `e${'s'.repeat(MAX_CMS_NESTING)}`, false],
  ])(
    'when %s come, then cms-nesting-too-deep answers before the content is read, and analyze says why',
    async (_, layers, stream) => {
      const file = nest(layers, `deep-${layers}-${stream}`, stream);
      const { input, pulled } = counted(file);
      await expect(convertPkcs7ToJose(input, { metadata: {}, resolver })).rejects.toMatchObject({
        code: 'cms_nesting_too_deep',
        status: 415,
        slug: 'cms-nesting-too-deep',
      });
      // At once: the reader's first batch (112 KiB) and the look-ahead, not the 2 MiB content.
      expect(pulled()).toBeLessThan(256 * 1024);
      const a = await analyzePkcs7(chunked(file, 4096), resolver);
      expect(a.convertible).toBe(false);
      expect(a.reason).toContain(`nest deeper than ${MAX_CMS_NESTING} levels`);
    },
  );

  it('when an EnvelopedData holds SignedData layers past the limit, then the answer ends in decryption-failed with no JWS, and at the limit it converts', async () => {
    const deep = nest(`${'s'.repeat(MAX_CMS_NESTING)}e`, 'enc-deep');
    const r = await convertPkcs7ToJose(chunked(deep, 4096), { metadata: {}, resolver });
    const parts: Buffer[] = [];
    await expect(
      (async () => {
        for await (const c of r.body) parts.push(c);
      })(),
    ).rejects.toMatchObject({ code: 'decryption_failed' });
    expect(Buffer.concat(parts).toString('latin1')).not.toContain('"signature"');

    const ok = nest(`${'s'.repeat(MAX_CMS_NESTING - 1)}e`, 'enc-ok');
    const done = await convertPkcs7ToJose(chunked(ok, 4096), { metadata: {}, resolver });
    const body = await collect(done.body);
    const mp = parseMultipart(body, done.contentType).parts;
    const { plaintext } = await decryptJweParts(mp, rsa.privateKey);
    // The JWE holds what the inner SignedData signed (two SignedData more), its JWS verifies over it.
    expect(plaintext.equals(ssl.read(`enc-ok-${MAX_CMS_NESTING - 3}.der`))).toBe(true);
    await verifyDetached(
      JSON.parse(mp[2].body.toString()),
      plaintext,
      createPublicKey(rsa.privateKey),
    );
  });
});
