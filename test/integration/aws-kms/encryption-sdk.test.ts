/**
 * The AWS Encryption SDK for JavaScript (@aws-crypto/client-node) with a KMS keyring whose client
 * points at Keyward: a 10 MB file encrypted and decrypted in streaming mode with a context.
 */
import { randomBytes, createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { KMS } from '@aws-sdk/client-kms';
import { buildClient, CommitmentPolicy, KmsKeyringNode, getClient } from '@aws-crypto/client-node';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { awsTenant, type AwsTenant } from './support.ts';

describe('AWS KMS API with the AWS Encryption SDK (streaming, 10 MB)', () => {
  let app: TestApp;
  let t: AwsTenant;

  beforeAll(async () => {
    app = await startTestApp();
    t = await awsTenant(app);
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('when a 10 MB file is encrypted and decrypted as streams with a context, then the bytes and the context come back', async () => {
    const clientProvider = getClient(KMS, {
      endpoint: app.url,
      credentials: { accessKeyId: t.accessKeyId, secretAccessKey: t.secretAccessKey },
      maxAttempts: 1,
    });
    const bootstrap = clientProvider('eu-central-1') as KMS;
    const created = await bootstrap.createKey({});
    const arn = created.KeyMetadata!.Arn!;
    const keyring = new KmsKeyringNode({ generatorKeyId: arn, clientProvider });
    const { encryptStream, decryptStream } = buildClient(
      CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT,
    );
    const file = randomBytes(10 * 1024 * 1024);
    const context = { invoice: '42', stage: 'test' };
    const chunks: Buffer[] = [];
    await pipeline(
      Readable.from([file.subarray(0, 5_000_000), file.subarray(5_000_000)]),
      encryptStream(keyring, { encryptionContext: context, suiteId: 0x0478 }),
      new Writable({
        write(c, _e, cb) {
          chunks.push(c);
          cb();
        },
      }),
    );
    const message = Buffer.concat(chunks);
    const out: Buffer[] = [];
    let seen: Record<string, string> = {};
    const decrypting = decryptStream(keyring);
    decrypting.once('MessageHeader', (h: { encryptionContext: Record<string, string> }) => {
      seen = h.encryptionContext;
    });
    await pipeline(
      Readable.from([message]),
      decrypting,
      new Writable({
        write(c, _e, cb) {
          out.push(c);
          cb();
        },
      }),
    );
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(sha(Buffer.concat(out))).toBe(sha(file));
    expect(seen).toMatchObject(context);
    bootstrap.destroy();
  });
});
