/**
 * Encrypt through the Vault Transit API (POST /v1/transit/encrypt/<key>, X-Vault-Token) against
 * POST /api/v3/crypto/encrypt (bearer token), 1 KiB under the same AES-256 key with the same
 * workload token, one API process, alternated ABBA BAAB in one run (target: Transit at least 0.9
 * of the Core API), with p50/p99 and the service CPU per request. BENCH_SECONDS (default 3) per
 * slot, BENCH_ROUNDS (default 2) of the eight slots.
 */
import { randomBytes } from 'node:crypto';
import { runLoad, chooseTool, type LoadResult } from './lib/load.ts';
import { printResult } from './lib/result.ts';
import { cpuSeconds } from './lib/cms.ts';
import { provision, startKeyward } from './lib/keyward.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const tool = chooseTool();
const fmt = (r: LoadResult) =>
  `${Math.round(r.requestsPerSecond).toLocaleString('en')} req/s (p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms)`;
const mean = (rs: LoadResult[], f: (r: LoadResult) => number = (r) => r.requestsPerSecond) =>
  rs.reduce((a, r) => a + f(r), 0) / rs.length;
const avg = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;

const data = randomBytes(1024).toString('base64');

const k = await startKeyward();
try {
  const t = await provision(k, ['crypto.encrypt'], [{ kid: 'aes', type: 'aes-256' }]);
  // Server CPU per request as well as throughput: on a shared machine the throughput of one slot
  // swings with the neighbours' load, the CPU a request costs the service much less.
  const cpuPerRequest = { transit: [] as number[], core: [] as number[] };
  const pid = k.child.process.pid!;
  const measure = async (api: 'transit' | 'core', secs = seconds): Promise<LoadResult> => {
    const cpu0 = cpuSeconds(pid);
    const r = await runLoad(
      api === 'transit'
        ? {
            url: `${k.url}/v1/transit/encrypt/aes`,
            connections,
            seconds: secs,
            tool,
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'X-Vault-Token': t.token },
            body: JSON.stringify({ plaintext: data }),
          }
        : {
            url: `${k.url}/api/v3/crypto/encrypt`,
            connections,
            seconds: secs,
            tool,
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${t.token}` },
            body: JSON.stringify({ kid: 'aes', data }),
          },
    );
    if (r.errors > 0) throw new Error(`${r.errors} failed requests on ${api}`);
    cpuPerRequest[api].push(((cpuSeconds(pid) - cpu0) / r.requests) * 1e6);
    return r;
  };
  // Warm-up, each API for a full slot: the key cache, the JIT and the heap's growth to its
  // working size (a first slot measured up to half again the CPU per request of the later ones).
  await measure('transit');
  await measure('core');
  cpuPerRequest.transit.length = cpuPerRequest.core.length = 0;
  const runs = { transit: [] as LoadResult[], core: [] as LoadResult[] };
  // ABBA BAAB, ROUNDS times: each API as often first as last, so drift of the shared machine
  // hits both alike.
  const order = [
    'transit',
    'core',
    'core',
    'transit',
    'core',
    'transit',
    'transit',
    'core',
  ] as const;
  for (let round = 0; round < rounds; round += 1)
    for (const api of order) runs[api].push(await measure(api));
  const ratio = mean(runs.transit) / mean(runs.core);
  const cpuRatio = avg(cpuPerRequest.core) / avg(cpuPerRequest.transit);
  console.log(`Transit encrypt: ${runs.transit.map(fmt).join(' | ')}`);
  console.log(`/api/v3/crypto/encrypt: ${runs.core.map(fmt).join(' | ')}`);
  console.log(`Transit/Core ratio: ${ratio.toFixed(3)} (target >= 0.9)`);
  console.log(
    `service CPU per request: Transit ${cpuPerRequest.transit.map((x) => x.toFixed(0)).join(' | ')} µs, Core ${cpuPerRequest.core.map((x) => x.toFixed(0)).join(' | ')} µs; Core/Transit ${cpuRatio.toFixed(3)}`,
  );
  printResult({
    name: 'vault-transit-encrypt',
    metric: 'Vault Transit encrypt 1 KiB AES-256 (X-Vault-Token), 1 process',
    value: Math.round(mean(runs.transit)),
    baseline: 'POST /api/v3/crypto/encrypt 1 KiB AES-256 (bearer), same run',
    baselineValue: Math.round(mean(runs.core)),
    ratio: Number(ratio.toFixed(3)),
    unit: 'req/s',
    target: { op: '>=', value: 0.9, of: 'ratio' },
    notes: `${tool}, ${connections} connections, ABBA BAAB ${rounds} times, ${seconds} s each, after a warm-up slot each; p50/p99 Transit ${mean(runs.transit, (r) => r.p50Ms).toFixed(2)}/${mean(runs.transit, (r) => r.p99Ms).toFixed(2)} ms, Core ${mean(runs.core, (r) => r.p50Ms).toFixed(2)}/${mean(runs.core, (r) => r.p99Ms).toFixed(2)} ms; service CPU per request Transit ${avg(cpuPerRequest.transit).toFixed(0)} µs, Core ${avg(cpuPerRequest.core).toFixed(0)} µs (Core/Transit ${cpuRatio.toFixed(3)})`,
  });
} finally {
  await k.stop();
}
