/**
 * Mutation fuzzing of the streaming endpoints over HTTP: the real producers' CMS files of
 * fuzz-seeds.ts (openssl's signed and enveloped DER and BER, several signers and recipients,
 * password recipients, nesting, the archive forms (docs/api.md) and gpgsm's armour, a .p7b,
 * osslsigncode's v1.5 content, BouncyCastle's X25519/X448 recipients) are bit-flipped, truncated,
 * spliced and given edited length bytes, FUZZ_MUTANTS of them (default 400; FUZZ_SEED replays a
 * run), each sent to analyze and convert with one of the metadata of FUZZ_METADATA. Every answer
 * must be a problem (4xx, problem+json), a whole 200 that is a verified result (its JWS records
 * every original signer as verified, its multipart answer is complete), or a 200 cut off mid-body
 * (a failure found after the answer began); never a 5xx, a dropped connection without an answer,
 * or a hang.
 */
import {
  ANALYZE,
  CONVERT,
  OpenSslDir,
  formBody,
  makeActor,
  postWithDeadline,
  startTestApp,
} from './helpers.ts';
import type { Actor, TestApp } from './helpers.ts';
import { FUZZ_METADATA, fuzzSeeds } from './fuzz-seeds.ts';
import { prng } from '../../../support/prng.ts';
import { mutateBytes, type Mutant } from '../../support/mutate.ts';

const MUTANTS = Number(process.env.FUZZ_MUTANTS ?? 400);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const DEADLINE_MS = 15_000;
const CONCURRENCY = 4;

const rand = prng(SEED);

/** A BER length byte: the byte after a plausible tag, set to a long-form or indefinite marker or a random value. */
function lengthByte(b: Buffer, int: (n: number) => number): Mutant {
  const candidates: number[] = [];
  for (let i = 0; i < Math.min(b.length - 1, 4096); i++)
    if ([0x30, 0x31, 0x04, 0x06, 0x02, 0xa0, 0xa1, 0x24].includes(b[i])) candidates.push(i + 1);
  const at = candidates.length ? candidates[int(candidates.length)] : int(b.length);
  const v = [0x80, 0x81, 0x84, 0x88, 0x89, 0xff, 0x00, int(256)][int(8)];
  b[at] = v;
  if (v >= 0x81 && v <= 0x88 && at + 1 < b.length) b[at + 1] = [0x00, 0x7f, 0xff][int(3)];
  return { data: b, how: `length byte at ${at} set to 0x${v.toString(16)}` };
}

/** One mutation of a seed file, spliced with the others and with BER length bytes edited. */
const mutate = (seeds: Buffer[]): Mutant =>
  mutateBytes(rand, seeds[Math.floor(rand() * seeds.length)], {
    donors: seeds,
    extra: [lengthByte],
  });

/** Why a whole 200 conversion answer is not a verified result, or null when it is one. */
function unverified(contentType: string, body: Buffer): string | null {
  const signersOf = (jws: { protected?: string }) =>
    (JSON.parse(Buffer.from(jws.protected ?? '', 'base64url').toString()).kw_signers ?? []) as {
      verified?: string;
    }[];
  const checkJws = (text: string): string | null => {
    const o = JSON.parse(text) as { keys?: unknown[]; signatures?: object[]; signature?: string };
    if (contentType.startsWith('application/jwk-set+json')) return o.keys ? null : 'no keys';
    const sigs = o.signatures ?? [o];
    for (const s of sigs)
      for (const x of signersOf(s as { protected?: string }))
        if (x.verified !== 'signature' && x.verified !== 'chain') return 'an unverified signer';
    return sigs.length ? null : 'no signature';
  };
  try {
    const m = /boundary="?([^";]+)"?/.exec(contentType);
    if (!m) return checkJws(body.toString());
    const text = body.toString('latin1');
    if (!text.trimEnd().endsWith(`--${m[1]}--`)) return 'a multipart answer without its end';
    const parts = text.split(`--${m[1]}`).slice(1, -1);
    const bodyOf = (p: string) => p.slice(p.search(/\r?\n\r?\n/)).trim();
    JSON.parse(bodyOf(parts[0]));
    return parts.length > 2 ? checkJws(bodyOf(parts[2])) : null;
  } catch (err) {
    return `unreadable: ${(err as Error).message}`;
  }
}

let app: TestApp;
let ssl: OpenSslDir;
let actor: Actor;
let seeds: Buffer[];

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'warn' });
  ssl = new OpenSslDir();
  actor = await makeActor(app);
  seeds = await fuzzSeeds(app, actor, ssl);
}, 120_000);

afterAll(async () => {
  ssl.cleanup();
  await app.stop();
});

describe(`fuzzing analyze and convert over HTTP with ${MUTANTS} mutants (FUZZ_SEED=${SEED})`, () => {
  it(
    'when mutated CMS files are sent, then every answer is a problem, a verified 200 or a cut-off 200, never a 5xx or a hang, and /healthz answers after',
    async () => {
      const failures: string[] = [];
      const tally: Record<string, number> = {};
      const auth = { authorization: `Bearer ${actor.user}` };
      let left = MUTANTS;

      async function check(
        kind: string,
        how: string,
        p: Promise<Awaited<ReturnType<typeof postWithDeadline>>>,
      ): Promise<void> {
        const r = await p;
        const key = r.hung
          ? 'hung'
          : r.status === 0
            ? 'no answer'
            : r.cut
              ? `${r.status} cut`
              : String(r.status);
        tally[`${kind} ${key}`] = (tally[`${kind} ${key}`] ?? 0) + 1;
        const problem =
          r.status >= 400 && r.status < 500 && r.contentType.startsWith('application/problem+json');
        const whole = r.status === 200 && !r.cut && !r.hung;
        const why = whole && kind === 'convert' ? unverified(r.contentType, r.body) : null;
        const ok = !r.hung && (problem || (r.status === 200 && !why));
        if (!ok)
          failures.push(
            `${kind}: ${how} → ${key} ${why ?? ''} ${r.body.subarray(0, 300).toString()}`,
          );
      }

      async function worker(): Promise<void> {
        while (left > 0 && failures.length < 5) {
          left--;
          const { data, how } = mutate(seeds);
          const metadata = FUZZ_METADATA[Math.floor(rand() * FUZZ_METADATA.length)];
          const form = formBody([
            ['metadata', metadata],
            ['file', data],
          ]);
          await check(
            'analyze',
            how,
            postWithDeadline(
              `${app.url}${ANALYZE}`,
              { ...auth, 'content-type': 'application/pkcs7-mime' },
              data,
              DEADLINE_MS,
            ),
          );
          await check(
            'convert',
            `${how} with ${metadata}`,
            postWithDeadline(
              `${app.url}${CONVERT}`,
              { ...auth, 'content-type': form.contentType },
              form.body,
              DEADLINE_MS,
            ),
          );
        }
      }

      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      const total = Object.values(tally).reduce((a, b) => a + b, 0);
      console.log(`fuzz: ${total} requests, seed ${SEED}: ${JSON.stringify(tally)}`);
      if (failures.length)
        console.log(
          app
            .logText()
            .split('\n')
            .filter((l) => l.includes('"level":50'))
            .slice(0, 5)
            .join('\n'),
        );
      expect(failures).toEqual([]);
      expect(total).toBe(2 * MUTANTS);
      expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    },
    // Bounded by the count: each request has its deadline, four run at once.
    Math.ceil(MUTANTS / CONCURRENCY) * 2 * DEADLINE_MS,
  );
});
