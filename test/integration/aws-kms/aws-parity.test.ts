/**
 * Where AWS KMS refuses and a lax emulation would not, through @aws-sdk/client-kms: an
 * EncryptionAlgorithm the key does not use, a session token, a key's 51st tag, a key ARN of
 * another region than the request's. Each answers the exception AWS answers, and changes nothing.
 */
import {
  CreateKeyCommand,
  DecryptCommand,
  EncryptCommand,
  GenerateRandomCommand,
  DescribeKeyCommand,
  KMSClient,
  ListResourceTagsCommand,
  ReEncryptCommand,
  TagResourceCommand,
} from '@aws-sdk/client-kms';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { awsTenant, type AwsTenant } from './support.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const REGION = 'eu-west-1';

describe('AWS KMS API parity: what AWS refuses is refused', () => {
  let app: TestApp;
  let t: AwsTenant;
  let kms: KMSClient;
  let aes: string;
  let rsa: string;

  const client = (o: { region?: string; sessionToken?: string } = {}) =>
    new KMSClient({
      endpoint: app.url,
      region: o.region ?? REGION,
      credentials: {
        accessKeyId: t.accessKeyId,
        secretAccessKey: t.secretAccessKey,
        ...(o.sessionToken ? { sessionToken: o.sessionToken } : {}),
      },
      maxAttempts: 1,
    });
  /** The SDK's exception name of a failed call. */
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => 'succeeded',
      (e: { name: string }) => e.name,
    );

  beforeAll(async () => {
    app = await startTestApp();
    t = await awsTenant(app);
    kms = client();
    aes = (await kms.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    rsa = (
      await kms.send(new CreateKeyCommand({ KeySpec: 'RSA_2048', KeyUsage: 'ENCRYPT_DECRYPT' }))
    ).KeyMetadata!.KeyId!;
  });
  afterAll(async () => {
    kms?.destroy();
    await app?.stop();
  });

  describe('EncryptionAlgorithm is the key’s, never a label', () => {
    it('when an AES key is asked to encrypt with RSAES_OAEP_SHA_256, then InvalidKeyUsageException (AWS: the algorithm does not suit the KeySpec)', async () => {
      expect(
        await failure(
          kms.send(
            new EncryptCommand({
              KeyId: aes,
              Plaintext: enc('x'),
              EncryptionAlgorithm: 'RSAES_OAEP_SHA_256',
            }),
          ),
        ),
      ).toBe('InvalidKeyUsageException');
    });

    it('when an RSA key encrypts without naming its algorithm (SYMMETRIC_DEFAULT), then InvalidKeyUsageException; with RSAES_OAEP_SHA_256 the answer and Decrypt name it', async () => {
      expect(await failure(kms.send(new EncryptCommand({ KeyId: rsa, Plaintext: enc('x') })))).toBe(
        'InvalidKeyUsageException',
      );
      const e = await kms.send(
        new EncryptCommand({
          KeyId: rsa,
          Plaintext: enc('oaep'),
          EncryptionAlgorithm: 'RSAES_OAEP_SHA_256',
        }),
      );
      expect(e.EncryptionAlgorithm).toBe('RSAES_OAEP_SHA_256');
      const d = await kms.send(
        new DecryptCommand({
          CiphertextBlob: e.CiphertextBlob,
          KeyId: rsa,
          EncryptionAlgorithm: 'RSAES_OAEP_SHA_256',
        }),
      );
      expect([new TextDecoder().decode(d.Plaintext), d.EncryptionAlgorithm]).toEqual([
        'oaep',
        'RSAES_OAEP_SHA_256',
      ]);
      expect(
        await failure(
          kms.send(new DecryptCommand({ CiphertextBlob: e.CiphertextBlob, KeyId: rsa })),
        ),
      ).toBe('InvalidCiphertextException');
    });

    it('when an AES ciphertext is decrypted as RSAES_OAEP_SHA_256, then InvalidCiphertextException, the one answer of a failed Decrypt, and no plaintext', async () => {
      const { CiphertextBlob } = await kms.send(
        new EncryptCommand({ KeyId: aes, Plaintext: enc('secret') }),
      );
      expect(
        await failure(
          kms.send(
            new DecryptCommand({ CiphertextBlob, EncryptionAlgorithm: 'RSAES_OAEP_SHA_256' }),
          ),
        ),
      ).toBe('InvalidCiphertextException');
      expect(
        await failure(
          kms.send(
            new ReEncryptCommand({
              CiphertextBlob,
              DestinationKeyId: aes,
              SourceEncryptionAlgorithm: 'RSAES_OAEP_SHA_256',
            }),
          ),
        ),
      ).toBe('InvalidCiphertextException');
      const r = await kms.send(
        new ReEncryptCommand({
          CiphertextBlob,
          DestinationKeyId: rsa,
          DestinationEncryptionAlgorithm: 'RSAES_OAEP_SHA_256',
        }),
      );
      expect([r.SourceEncryptionAlgorithm, r.DestinationEncryptionAlgorithm]).toEqual([
        'SYMMETRIC_DEFAULT',
        'RSAES_OAEP_SHA_256',
      ]);
    });
  });

  it('when a client signs with a session token (temporary credentials), then UnrecognizedClientException saying this service issues none', async () => {
    const temporary = client({ sessionToken: 'FwoGZXIvYXdzEXAMPLETOKEN' });
    try {
      const err = await temporary.send(new GenerateRandomCommand({ NumberOfBytes: 8 })).then(
        () => null,
        (e: { name: string; message: string }) => e,
      );
      expect(err?.name).toBe('UnrecognizedClientException');
      expect(err?.message).toMatch(/session token/i);
    } finally {
      temporary.destroy();
    }
  });

  it("when a key would hold more than 50 tags, then LimitExceededException and its tags unchanged; more than 50 in one request is TagException; replacing a held tag's value at 50 is fine", async () => {
    const kid = (await kms.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    const tags = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ TagKey: `k${from + i}`, TagValue: 'v' }));
    await kms.send(new TagResourceCommand({ KeyId: kid, Tags: tags(0, 30) }));
    await kms.send(new TagResourceCommand({ KeyId: kid, Tags: tags(30, 20) }));
    expect(await failure(kms.send(new TagResourceCommand({ KeyId: kid, Tags: tags(50, 1) })))).toBe(
      'LimitExceededException',
    );
    expect(
      await failure(kms.send(new TagResourceCommand({ KeyId: kid, Tags: tags(40, 11) }))),
    ).toBe('LimitExceededException');
    await kms.send(
      new TagResourceCommand({ KeyId: kid, Tags: [{ TagKey: 'k0', TagValue: 'replaced' }] }),
    );
    const listed = await kms.send(new ListResourceTagsCommand({ KeyId: kid, Limit: 1000 }));
    expect(listed.Tags).toHaveLength(50);
    expect(listed.Tags!.find((x) => x.TagKey === 'k0')?.TagValue).toBe('replaced');
    expect(await failure(kms.send(new CreateKeyCommand({ Tags: tags(0, 51) })))).toBe(
      'TagException',
    );
  });

  it("when a key ARN names another region than the request is signed for, then NotFoundException; the request's own region finds the key", async () => {
    const { KeyMetadata } = await kms.send(new DescribeKeyCommand({ KeyId: aes }));
    const here = KeyMetadata!.Arn!;
    expect(here).toContain(`:${REGION}:`);
    const elsewhere = client({ region: 'us-east-2' });
    try {
      expect(await failure(elsewhere.send(new DescribeKeyCommand({ KeyId: here })))).toBe(
        'NotFoundException',
      );
      expect(
        await failure(elsewhere.send(new EncryptCommand({ KeyId: here, Plaintext: enc('x') }))),
      ).toBe('NotFoundException');
      const there = here.replace(`:${REGION}:`, ':us-east-2:');
      expect(
        (await elsewhere.send(new DescribeKeyCommand({ KeyId: there }))).KeyMetadata!.KeyId,
      ).toBe(aes);
    } finally {
      elsewhere.destroy();
    }
  });
});
