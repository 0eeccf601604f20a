/**
 * @aws-sdk/client-kms v3 against Keyward's own port: every data-plane operation, success and
 * error paths, with the exceptions the SDK turns into its typed errors.
 */
import { createHash } from 'node:crypto';
import {
  CreateKeyCommand,
  DecryptCommand,
  DescribeKeyCommand,
  EncryptCommand,
  GenerateDataKeyCommand,
  GenerateDataKeyPairCommand,
  GenerateDataKeyPairWithoutPlaintextCommand,
  GenerateDataKeyWithoutPlaintextCommand,
  GenerateMacCommand,
  GenerateRandomCommand,
  GetPublicKeyCommand,
  ListKeyRotationsCommand,
  RotateKeyOnDemandCommand,
  KMSClient,
  ReEncryptCommand,
  SignCommand,
  VerifyCommand,
  VerifyMacCommand,
} from '@aws-sdk/client-kms';
import { createPublicKey, createVerify } from 'node:crypto';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { awsTenant, type AwsTenant } from './support.ts';

const enc = (s: string) => new TextEncoder().encode(s);

describe('AWS KMS API with @aws-sdk/client-kms v3', () => {
  let app: TestApp;
  let t: AwsTenant;
  let kms: KMSClient;
  let aes: string;

  beforeAll(async () => {
    app = await startTestApp();
    t = await awsTenant(app);
    kms = new KMSClient({
      endpoint: app.url,
      region: 'eu-west-1',
      credentials: { accessKeyId: t.accessKeyId, secretAccessKey: t.secretAccessKey },
      maxAttempts: 1,
    });
    const created = await kms.send(new CreateKeyCommand({ Description: 'sdk test' }));
    aes = created.KeyMetadata!.KeyId!;
  });
  afterAll(async () => {
    kms?.destroy();
    await app?.stop();
  });

  it('when data is encrypted with a context, then it decrypts without a KeyId only under the same context', async () => {
    const ctx = { tenant: 'acme', purpose: 'invoices' };
    const e = await kms.send(
      new EncryptCommand({ KeyId: aes, Plaintext: enc('attack at dawn'), EncryptionContext: ctx }),
    );
    expect(e.KeyId).toMatch(/^arn:aws:kms:eu-west-1:\d{12}:key\//);
    const d = await kms.send(
      new DecryptCommand({ CiphertextBlob: e.CiphertextBlob, EncryptionContext: ctx }),
    );
    expect(Buffer.from(d.Plaintext!).toString()).toBe('attack at dawn');
    await expect(
      kms.send(
        new DecryptCommand({
          CiphertextBlob: e.CiphertextBlob,
          EncryptionContext: { tenant: 'acmei' },
        }),
      ),
    ).rejects.toMatchObject({
      name: 'InvalidCiphertextException',
      $metadata: { httpStatusCode: 400 },
    });
    // The canonical encoding separates key and value: {"ab":"c"} is not {"a":"bc"}.
    const e2 = await kms.send(
      new EncryptCommand({ KeyId: aes, Plaintext: enc('x'), EncryptionContext: { ab: 'c' } }),
    );
    await expect(
      kms.send(
        new DecryptCommand({ CiphertextBlob: e2.CiphertextBlob, EncryptionContext: { a: 'bc' } }),
      ),
    ).rejects.toMatchObject({ name: 'InvalidCiphertextException' });
  });

  it('when data keys and re-encryption are asked for, then the wrapped keys open to the plaintext', async () => {
    const dk = await kms.send(new GenerateDataKeyCommand({ KeyId: aes, KeySpec: 'AES_256' }));
    expect(dk.Plaintext).toHaveLength(32);
    const opened = await kms.send(new DecryptCommand({ CiphertextBlob: dk.CiphertextBlob }));
    expect(Buffer.from(opened.Plaintext!)).toEqual(Buffer.from(dk.Plaintext!));
    const wp = await kms.send(
      new GenerateDataKeyWithoutPlaintextCommand({ KeyId: aes, NumberOfBytes: 24 }),
    );
    expect((wp as unknown as Record<string, unknown>).Plaintext).toBeUndefined();
    const other = (await kms.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    const re = await kms.send(
      new ReEncryptCommand({ CiphertextBlob: wp.CiphertextBlob, DestinationKeyId: other }),
    );
    expect(re.KeyId).toContain(other);
    const back = await kms.send(new DecryptCommand({ CiphertextBlob: re.CiphertextBlob }));
    expect(back.Plaintext).toHaveLength(24);
    await expect(
      kms.send(new DecryptCommand({ CiphertextBlob: re.CiphertextBlob, KeyId: aes })),
    ).rejects.toMatchObject({ name: 'IncorrectKeyException' });
    await expect(
      kms.send(new DecryptCommand({ CiphertextBlob: enc('not a keyward blob') })),
    ).rejects.toMatchObject({ name: 'InvalidCiphertextException' });
    await expect(kms.send(new GenerateDataKeyCommand({ KeyId: aes }))).rejects.toMatchObject({
      name: 'ValidationException',
    });
  });

  it('when data key pairs are asked for (RSA and EC), then the private key opens and matches the public key', async () => {
    for (const spec of ['RSA_2048', 'ECC_NIST_P256'] as const) {
      const p = await kms.send(new GenerateDataKeyPairCommand({ KeyId: aes, KeyPairSpec: spec }));
      const opened = await kms.send(
        new DecryptCommand({ CiphertextBlob: p.PrivateKeyCiphertextBlob }),
      );
      expect(Buffer.from(opened.Plaintext!)).toEqual(Buffer.from(p.PrivateKeyPlaintext!));
      const pub = createPublicKey({ key: Buffer.from(p.PublicKey!), format: 'der', type: 'spki' });
      expect(pub.asymmetricKeyType).toBe(spec === 'RSA_2048' ? 'rsa' : 'ec');
    }
    const w = await kms.send(
      new GenerateDataKeyPairWithoutPlaintextCommand({ KeyId: aes, KeyPairSpec: 'ECC_NIST_P384' }),
    );
    expect(w.PublicKey).toBeDefined();
    await expect(
      kms.send(new GenerateDataKeyPairCommand({ KeyId: aes, KeyPairSpec: 'SM2' as never })),
    ).rejects.toMatchObject({ name: 'ValidationException' });
  });

  it('when MACs, random bytes, signatures and public keys are asked for, then they verify here and with OpenSSL', async () => {
    const hmac = (
      await kms.send(new CreateKeyCommand({ KeySpec: 'HMAC_256', KeyUsage: 'GENERATE_VERIFY_MAC' }))
    ).KeyMetadata!.KeyId!;
    const m = await kms.send(
      new GenerateMacCommand({ KeyId: hmac, Message: enc('m'), MacAlgorithm: 'HMAC_SHA_256' }),
    );
    const ok = await kms.send(
      new VerifyMacCommand({
        KeyId: hmac,
        Message: enc('m'),
        Mac: m.Mac,
        MacAlgorithm: 'HMAC_SHA_256',
      }),
    );
    expect(ok.MacValid).toBe(true);
    await expect(
      kms.send(
        new VerifyMacCommand({
          KeyId: hmac,
          Message: enc('n'),
          Mac: m.Mac,
          MacAlgorithm: 'HMAC_SHA_256',
        }),
      ),
    ).rejects.toMatchObject({ name: 'KMSInvalidMacException' });
    await expect(
      kms.send(
        new GenerateMacCommand({ KeyId: aes, Message: enc('m'), MacAlgorithm: 'HMAC_SHA_256' }),
      ),
    ).rejects.toMatchObject({ name: 'InvalidKeyUsageException' });
    const r = await kms.send(new GenerateRandomCommand({ NumberOfBytes: 48 }));
    expect(r.Plaintext).toHaveLength(48);

    for (const [spec, alg, hash] of [
      ['ECC_NIST_P256', 'ECDSA_SHA_256', 'sha256'],
      ['RSA_2048', 'RSASSA_PKCS1_V1_5_SHA_256', 'sha256'],
    ] as const) {
      const kid = (await kms.send(new CreateKeyCommand({ KeySpec: spec, KeyUsage: 'SIGN_VERIFY' })))
        .KeyMetadata!.KeyId!;
      const pub = await kms.send(new GetPublicKeyCommand({ KeyId: kid }));
      expect(pub.SigningAlgorithms).toContain(alg);
      const raw = await kms.send(
        new SignCommand({
          KeyId: kid,
          Message: enc('hello'),
          MessageType: 'RAW',
          SigningAlgorithm: alg,
        }),
      );
      const v = createVerify(hash).update('hello');
      expect(
        v.verify(
          createPublicKey({ key: Buffer.from(pub.PublicKey!), format: 'der', type: 'spki' }),
          Buffer.from(raw.Signature!),
        ),
      ).toBe(true);
      const digest = createHash(hash).update('hello').digest();
      const dsig = await kms.send(
        new SignCommand({
          KeyId: kid,
          Message: digest,
          MessageType: 'DIGEST',
          SigningAlgorithm: alg,
        }),
      );
      const verified = await kms.send(
        new VerifyCommand({
          KeyId: kid,
          Message: enc('hello'),
          MessageType: 'RAW',
          Signature: dsig.Signature,
          SigningAlgorithm: alg,
        }),
      );
      expect(verified.SignatureValid).toBe(true);
      await expect(
        kms.send(
          new VerifyCommand({
            KeyId: kid,
            Message: enc('hellO'),
            MessageType: 'RAW',
            Signature: dsig.Signature,
            SigningAlgorithm: alg,
          }),
        ),
      ).rejects.toMatchObject({ name: 'KMSInvalidSignatureException' });
    }
    await expect(kms.send(new GetPublicKeyCommand({ KeyId: aes }))).rejects.toMatchObject({
      name: 'UnsupportedOperationException',
    });
  });

  it('when a key is rotated on demand, then the rotation is listed and old ciphertext still decrypts', async () => {
    const e = await kms.send(new EncryptCommand({ KeyId: aes, Plaintext: enc('before') }));
    await kms.send(new RotateKeyOnDemandCommand({ KeyId: aes }));
    const r = await kms.send(new ListKeyRotationsCommand({ KeyId: aes }));
    expect(r.Rotations).toHaveLength(1);
    const d = await kms.send(new DecryptCommand({ CiphertextBlob: e.CiphertextBlob }));
    expect(Buffer.from(d.Plaintext!).toString()).toBe('before');
    await expect(kms.send(new RotateKeyOnDemandCommand({ KeyId: 'nope' }))).rejects.toMatchObject({
      name: 'NotFoundException',
    });
    // Debian's boto3 predates ListKeyRotations: its error path is here.
    await expect(kms.send(new ListKeyRotationsCommand({ KeyId: 'nope' }))).rejects.toMatchObject({
      name: 'NotFoundException',
    });
  });

  it('when a KeyId is unknown, of another account, or the credentials are wrong, then NotFound or UnrecognizedClient', async () => {
    const d = await kms.send(new DescribeKeyCommand({ KeyId: aes }));
    expect(d.KeyMetadata?.KeyState).toBe('Enabled');
    await expect(kms.send(new DescribeKeyCommand({ KeyId: 'no-such-key' }))).rejects.toMatchObject({
      name: 'NotFoundException',
    });
    await expect(
      kms.send(
        new EncryptCommand({
          KeyId: `arn:aws:kms:eu-west-1:000000000000:key/${aes}`,
          Plaintext: enc('x'),
        }),
      ),
    ).rejects.toMatchObject({ name: 'NotFoundException' });
    const wrong = new KMSClient({
      endpoint: app.url,
      region: 'eu-west-1',
      credentials: { accessKeyId: t.accessKeyId, secretAccessKey: 'x'.repeat(40) },
      maxAttempts: 1,
    });
    await expect(wrong.send(new GenerateRandomCommand({ NumberOfBytes: 8 }))).rejects.toMatchObject(
      {
        name: 'InvalidSignatureException',
      },
    );
    wrong.destroy();
  });
});
