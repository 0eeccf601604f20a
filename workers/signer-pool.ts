/**
 * The worker process's threads for a SignedData's signature and chain checks. The engine runs on
 * the worker's event loop, which also renews job locks and answers Redis and the database: checks
 * whose number and keys the input chooses run here instead, so a hostile file never stalls the
 * other jobs of the process (a blocked loop once timed out a database client, and the job was
 * retried and paid for again).
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { errorFromData } from '../shared/errors/index.ts';
import { poolThreadEnv } from '../shared/node-flags.ts';
import type { SignerChecker, SignerCheckOutput } from '../shared/pkcs7/types.ts';
import { offloaded } from '../shared/pkcs7/signer-checks.ts';

/** A pool of up to `threads` threads that runs checkSigners; close() ends them. */
export function signerCheckPool(threads: number): {
  checker: SignerChecker;
  close(): Promise<void>;
} {
  const piscina = new Piscina({
    filename: new URL('../shared/threads/signer-checks.ts', import.meta.url).href,
    minThreads: 0,
    maxThreads: Math.max(1, Math.min(threads, availableParallelism())),
    idleTimeout: 10_000,
    env: poolThreadEnv(),
  });
  return {
    checker: offloaded(async (input) => {
      try {
        return (await piscina.run(input, { name: 'checkSignersTask' })) as SignerCheckOutput;
      } catch (err) {
        // Problems cross the thread boundary as plain data.
        if (err && typeof err === 'object' && typeof (err as { code?: unknown }).code === 'string')
          throw errorFromData(err);
        throw err;
      }
    }),
    close: () => piscina.close(),
  };
}
