/**
 * KMS operations (data keys, re-encrypt, MAC, random) against encrypt, measured ABAB in one run on one API
 * process: POST /api/v3/crypto/generate-data-key (AES_256 under an AES-256 key) and
 * POST /api/v3/crypto/generate-mac (HMAC-SHA-256 over 1 KiB), each against
 * POST /api/v3/crypto/encrypt of 1 KiB (target: each at least 0.8 of encrypt), with p50/p99.
 * BENCH_SECONDS (default 4).
 */
import { randomBytes } from 'node:crypto';
import { runLoad, chooseTool, type LoadResult } from './lib/load.ts';
import { printResult } from './lib/result.ts';
import { provision, startKeyward } from './lib/keyward.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const connections = 64;
const tool = chooseTool();
const PERMS = [
  'crypto.encrypt',
  'crypto.decrypt',
  'crypto.generate-data-key',
  'crypto.sign',
  'crypto.verify',
];
const KEYS = [
  { kid: 'aes', type: 'aes-256' },
  { kid: 'mac', type: 'hmac-sha256' },
];
const fmt = (r: LoadResult) =>
  `${Math.round(r.requestsPerSecond).toLocaleString('en')} req/s (p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms)`;
const mean = (rs: LoadResult[], f: (r: LoadResult) => number = (r) => r.requestsPerSecond) =>
  rs.reduce((a, r) => a + f(r), 0) / rs.length;

const data = randomBytes(1024).toString('base64');
const bodies = {
  encrypt: JSON.stringify({ kid: 'aes', data }),
  'generate-data-key': JSON.stringify({ kid: 'aes', keySpec: 'AES_256' }),
  'generate-mac': JSON.stringify({ kid: 'mac', data }),
};
type Op = keyof typeof bodies;

const k = await startKeyward();
try {
  const t = await provision(k, PERMS, KEYS);
  const measure = async (op: Op, secs = seconds): Promise<LoadResult> => {
    const r = await runLoad({
      url: `${k.url}/api/v3/crypto/${op}`,
      connections,
      seconds: secs,
      tool,
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${t.token}` },
      body: bodies[op],
    });
    if (r.errors > 0) throw new Error(`${r.errors} failed requests on ${op}`);
    return r;
  };
  for (const op of Object.keys(bodies) as Op[]) await measure(op, 1); // warm-up: key cache, JIT
  const runs: Record<Op, LoadResult[]> = {
    encrypt: [],
    'generate-data-key': [],
    'generate-mac': [],
  };
  // ABAB: encrypt, data key, mac, then again, so drift of the shared machine hits all three alike.
  for (let round = 0; round < 2; round += 1)
    for (const op of Object.keys(bodies) as Op[]) runs[op].push(await measure(op));
  const enc = mean(runs.encrypt);
  for (const op of ['generate-data-key', 'generate-mac'] as const) {
    const ratio = mean(runs[op]) / enc;
    console.log(
      `${op}: ${runs[op].map(fmt).join(' | ')}; encrypt ${runs.encrypt.map(fmt).join(' | ')}; ratio ${ratio.toFixed(3)} (target >= 0.8)`,
    );
    printResult({
      name: `kms-${op}`,
      metric: `POST /api/v3/crypto/${op}, 1 process`,
      value: Math.round(mean(runs[op])),
      baseline: 'POST /api/v3/crypto/encrypt 1 KiB AES-256, same run',
      baselineValue: Math.round(enc),
      ratio: Number(ratio.toFixed(3)),
      unit: 'req/s',
      target: { op: '>=', value: 0.8, of: 'ratio', issue: 14 },
      notes: `${tool}, ${connections} connections, ABAB ${seconds} s; p50/p99 ${op} ${mean(runs[op], (r) => r.p50Ms).toFixed(2)}/${mean(runs[op], (r) => r.p99Ms).toFixed(2)} ms, encrypt ${mean(runs.encrypt, (r) => r.p50Ms).toFixed(2)}/${mean(runs.encrypt, (r) => r.p99Ms).toFixed(2)} ms`,
    });
  }
} finally {
  await k.stop();
}
