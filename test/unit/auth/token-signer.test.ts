import { generateKeyPairSync } from 'node:crypto';
import { compactVerify } from 'jose';
import { createPool, type WorkPool } from '../../../workers/pool.ts';
import { batchedSigner } from '../../../api/services/auth/token-signer.ts';

const b64url = (s: string) => Buffer.from(s).toString('base64url');
const es256 = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });

/** A JWS signing input of ES256 with a distinct payload. */
const signingInput = (n: number) =>
  `${b64url(JSON.stringify({ alg: 'ES256', typ: 'at+jwt', kid: 'k' }))}.${b64url(JSON.stringify({ n }))}`;

/** The payload of a compact JWS verified by jose (an implementation other than ours). */
async function verified(
  input: string,
  signature: Buffer,
  publicKey: ReturnType<typeof es256>['publicKey'],
) {
  const { payload } = await compactVerify(
    `${input}.${signature.toString('base64url')}`,
    publicKey,
    {
      algorithms: ['ES256'],
    },
  );
  return JSON.parse(new TextDecoder().decode(payload)) as { n: number };
}

describe('batched access-token signer', () => {
  let pool: WorkPool;
  beforeAll(() => {
    pool = createPool({ threads: 1, maxQueue: 16 });
  });
  afterAll(() => pool.close());

  it('when 600 signatures are asked for in one turn, then each verifies with jose over its own input', async () => {
    const { privateKey, publicKey } = es256();
    const signer = batchedSigner(pool, 2);
    const inputs = Array.from({ length: 600 }, (_, n) => signingInput(n));
    const signatures = await Promise.all(inputs.map((i) => signer(i, privateKey)));
    for (const [n, input] of inputs.entries()) {
      expect(signatures[n]).toHaveLength(64);
      expect(await verified(input, signatures[n], publicKey)).toEqual({ n });
    }
  });

  it('when the key changes within a turn (rotation), then each signature is made with the key it was asked for', async () => {
    const a = es256();
    const b = es256();
    const signer = batchedSigner(pool, 2);
    const asked = Array.from({ length: 9 }, (_, n) => ({ n, pair: n % 3 === 1 ? b : a }));
    const signatures = await Promise.all(
      asked.map(({ n, pair }) => signer(signingInput(n), pair.privateKey)),
    );
    for (const { n, pair } of asked)
      expect(await verified(signingInput(n), signatures[n], pair.publicKey)).toEqual({ n });
  });

  it('when the pool refuses the batch (closed), then the signatures are still made, on libuv', async () => {
    const closed = createPool({ threads: 1, maxQueue: 1 });
    await closed.close();
    const { privateKey, publicKey } = es256();
    const signer = batchedSigner(closed, 1);
    const signatures = await Promise.all([0, 1, 2].map((n) => signer(signingInput(n), privateKey)));
    for (const n of [0, 1, 2])
      expect(await verified(signingInput(n), signatures[n], publicKey)).toEqual({ n });
  });
});
