/**
 * Outside signers: a 1 GiB SignedData (`openssl cms -sign -binary
 * -nodetach -stream`, RSA signer, its certificate in the file) converted by the engine with the
 * tenant's archive signing key (the signer's private key not held: verified with the certificate
 * the file carries), against the same file converted with the signer's own key (the peer), in
 * the same process, alternated (ABBA), four rounds each. Both paths spool the content and hash it once
 * for the JWS (shared/jose/spooled-jws.ts); the figure is the ratio of the medians.
 * Target: at most 1.1. BENCH_OUTSIDE_MIB overrides the size (smoke runs).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { createReadStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { convertPkcs7ToJose } from '../shared/pkcs7/index.ts';
import type { KeyResolver, ResolvedKey } from '../shared/pkcs7/index.ts';
import { makeRsaCert, randomFile, signAttached } from './lib/cms.ts';
import { printResult } from './lib/result.ts';

const MiB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_OUTSIDE_MIB ?? 1024) * MiB;
const ROUNDS = 4;
const work = mkdtempSync('/tmp/keyward-outside-bench-');

function resolver(sign: ResolvedKey | null, archive: ResolvedKey | null): KeyResolver {
  return {
    byKid: async () => null,
    // The signer's own key only when the tenant holds it; nothing else is known by identifier.
    byCmsRef: async () => sign,
    archiveSigningKey: async () => archive,
  };
}

async function convertOnce(file: string, r: KeyResolver): Promise<number> {
  const started = performance.now();
  const result = await convertPkcs7ToJose(createReadStream(file, { highWaterMark: MiB }), {
    metadata: {},
    resolver: r,
  });
  for await (const chunk of result.body) void chunk;
  return (performance.now() - started) / 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  process.stdout.write(
    `load average before: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  );
  makeRsaCert(work);
  randomFile(join(work, 'data.bin'), SIZE);
  signAttached(work, 'data.bin', 'signed.der');
  rmSync(join(work, 'data.bin'));
  const signerPriv = createPrivateKey(readFileSync(join(work, 'key.pem')));
  const own: ResolvedKey = {
    kid: 'signer',
    version: 1,
    type: 'rsa-2048',
    privateKey: signerPriv,
    publicKey: createPublicKey(signerPriv),
  };
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const archive: ResolvedKey = {
    kid: 'archive',
    version: 1,
    type: 'rsa-2048',
    privateKey,
    publicKey,
  };
  const file = join(work, 'signed.der');
  const times = { archive: [] as number[], own: [] as number[] };
  for (let i = 0; i < ROUNDS; i += 1) {
    // ABBA: on a shared machine the load drifts, and whichever went first in every round took
    // the drift alone (a run at load 9.6 had one round at 8.90 s against 11.92 s).
    const order = i % 2 === 0 ? (['own', 'archive'] as const) : (['archive', 'own'] as const);
    for (const path of order)
      times[path].push(
        await convertOnce(file, path === 'own' ? resolver(own, null) : resolver(null, archive)),
      );
    process.stdout.write(
      `round ${i + 1}: own key ${times.own[i].toFixed(2)} s, archive key ${times.archive[i].toFixed(2)} s\n`,
    );
  }
  const ratio = median(times.archive) / median(times.own);
  process.stdout.write(
    `outside signer via archive key / signer's own key: ${ratio.toFixed(3)} (target <= 1.1), load ${loadavg()[0].toFixed(1)}\n`,
  );
  printResult({
    name: 'pkcs7-outside-signer',
    metric: 'median seconds per conversion',
    value: Number(median(times.archive).toFixed(3)),
    baseline: "the same SignedData converted with the signer's own key",
    baselineValue: Number(median(times.own).toFixed(3)),
    ratio: Number(ratio.toFixed(3)),
    unit: 's',
    target: { op: '<=', value: 1.1, of: 'ratio', issue: 26 },
    notes: `${SIZE / MiB} MiB, ${ROUNDS} rounds alternated ABBA, in-process engine, load ${loadavg()[0].toFixed(1)}`,
  });
} finally {
  rmSync(work, { recursive: true, force: true });
}
