import { generateKeyPairSync } from 'node:crypto';
import { compactVerify } from 'jose';
import { Writable } from 'node:stream';
import { batchedSigner, type BatchedSigner } from '../../../api/services/auth/token-signer.ts';
import { createLogger } from '../../../shared/logger.ts';

/** A logger whose lines are kept, to read what the signer told the operator. */
function keptLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger('info', sink), lines };
}

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
    { algorithms: ['ES256'] },
  );
  return JSON.parse(new TextDecoder().decode(payload)) as { n: number };
}

describe('batched access-token signer', () => {
  let signer: BatchedSigner;
  beforeEach(() => {
    signer = batchedSigner(keptLogger().logger);
  });
  afterEach(() => signer.close());

  it('when 600 signatures are asked for in one turn, then each verifies with jose over its own input', async () => {
    const { privateKey, publicKey } = es256();
    const inputs = Array.from({ length: 600 }, (_, n) => signingInput(n));
    const signatures = await Promise.all(inputs.map((i) => signer.sign(i, privateKey)));
    for (const [n, input] of inputs.entries()) {
      expect(signatures[n]).toHaveLength(64);
      expect(await verified(input, signatures[n], publicKey)).toEqual({ n });
    }
  });

  it('when the key changes within a turn and between turns (rotation), then each signature is made with the key it was asked for', async () => {
    const a = es256();
    const b = es256();
    for (let turn = 0; turn < 3; turn += 1) {
      const asked = Array.from({ length: 9 }, (_, n) => ({
        n,
        pair: (n + turn) % 3 === 1 ? b : a,
      }));
      const signatures = await Promise.all(
        asked.map(({ n, pair }) => signer.sign(signingInput(n), pair.privateKey)),
      );
      for (const { n, pair } of asked)
        expect(await verified(signingInput(n), signatures[n], pair.publicKey)).toEqual({ n });
    }
  });

  it('when the signing thread dies with a batch in flight, then those signatures are still made (on libuv), so are the next turns, and the operator is told once', async () => {
    const kept = keptLogger();
    const dying = batchedSigner(
      kept.logger,
      new URL('../../fixtures/dying-sign-thread.ts', import.meta.url),
    );
    try {
      const { privateKey, publicKey } = es256();
      for (const turn of [0, 1]) {
        const ns = [0, 1, 2].map((i) => 10 * turn + i);
        const signatures = await Promise.all(
          ns.map((n) => dying.sign(signingInput(n), privateKey)),
        );
        for (const [i, n] of ns.entries())
          expect(await verified(signingInput(n), signatures[i], publicKey)).toEqual({ n });
      }
      // Told once: the second turn came within the backoff, so no second thread was started.
      expect(kept.lines.filter((l) => l.includes('the token signing thread failed'))).toHaveLength(
        1,
      );
    } finally {
      await dying.close();
    }
  });

  it('when the signing thread cannot start (its file is missing), then the signatures are still made, on libuv', async () => {
    const kept = keptLogger();
    const broken = batchedSigner(
      kept.logger,
      new URL('../../fixtures/no-such-sign-thread.ts', import.meta.url),
    );
    try {
      const { privateKey, publicKey } = es256();
      const signatures = await Promise.all(
        [0, 1].map((n) => broken.sign(signingInput(n), privateKey)),
      );
      for (const n of [0, 1])
        expect(await verified(signingInput(n), signatures[n], publicKey)).toEqual({ n });
      expect(kept.lines.join('')).toMatch(/the token signing thread (failed|could not be started)/);
    } finally {
      await broken.close();
    }
  });

  it('when the signer is closed, then it still signs, on libuv', async () => {
    const { privateKey, publicKey } = es256();
    await signer.sign(signingInput(0), privateKey);
    await signer.close();
    expect(
      await verified(signingInput(1), await signer.sign(signingInput(1), privateKey), publicKey),
    ).toEqual({ n: 1 });
  });
});
