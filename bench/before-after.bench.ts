/**
 * This checkout against an older one, on the two hottest runtime paths: authenticated
 * `POST /api/v3/crypto/encrypt` of 1 KiB under AES-256 and client_credentials issuance through
 * `POST /api/v3/auth/token` rotating over 64 workloads. Both services run at once on `npm start`'s
 * defaults (each with its own DATA_DIR), and the load alternates between them, before, after,
 * after, before (BENCH_ROUNDS times, default 2), so the drift of a shared machine falls on both.
 * Prints each path's rate after the change against the rate before it, with p50/p99.
 *
 * BENCH_BEFORE_ROOT is the older checkout (unset, the script says so and measures nothing), with its own node_modules (a git worktree
 * of the commit before, `node_modules` linked or installed). BENCH_SECONDS (default 4) per run.
 * Load targets 127.0.0.1 only; both services stop at the end, also on failure.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chooseTool, runLoad, type LoadOptions, type LoadResult } from './lib/load.ts';
import { provision, provisionWorkloads, startKeyward } from './lib/keyward.ts';
import { printResult } from './lib/result.ts';

const BEFORE = process.env.BENCH_BEFORE_ROOT ?? '';
if (!BEFORE) {
  // `npm run bench` runs every script: without an older checkout there is nothing to compare.
  console.log('before-after: skipped; set BENCH_BEFORE_ROOT to an older checkout to compare');
  process.exit(0);
}
if (!existsSync(join(BEFORE, 'api/server.ts')))
  throw new Error(`BENCH_BEFORE_ROOT=${BEFORE} holds no api/server.ts: name a Keyward checkout`);
const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const connections = 64;
const tool = chooseTool();
const root = new URL('..', import.meta.url).pathname;

type Side = 'before' | 'after';

const mean = (rs: LoadResult[], f: (r: LoadResult) => number = (r) => r.requestsPerSecond) =>
  rs.reduce((a, r) => a + f(r), 0) / rs.length;

const sides = {
  before: await startKeyward({}, BEFORE),
  after: await startKeyward({}, root),
};
try {
  const loads = {} as Record<Side, { encrypt: LoadOptions; token: LoadOptions }>;
  for (const side of ['before', 'after'] as const) {
    const k = sides[side];
    const t = await provision(k, ['crypto.encrypt'], [{ kid: 'aes', type: 'aes-256' }]);
    const { clients } = await provisionWorkloads(k, ['crypto.encrypt', 'crypto.decrypt'], 64);
    loads[side] = {
      encrypt: {
        url: `${k.url}/api/v3/crypto/encrypt`,
        connections,
        tool,
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${t.token}` },
        body: JSON.stringify({ kid: 'aes', data: randomBytes(1024).toString('base64') }),
      },
      token: {
        url: `${k.url}/api/v3/auth/token`,
        connections,
        tool,
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        bodies: clients.map((c) =>
          new URLSearchParams({
            grant_type: 'client_credentials',
            client_id: c.clientId,
            client_secret: c.clientSecret,
          }).toString(),
        ),
      },
    };
    // Warm both paths (JIT, caches) before anything is measured.
    await runLoad({ ...loads[side].encrypt, seconds: 1 });
    await runLoad({ ...loads[side].token, seconds: 1 });
  }
  console.log(
    `before-after: before ${BEFORE}, after ${root}; ${tool}, ${connections} connections, ${rounds} x ABBA, ${seconds} s each`,
  );
  for (const path of ['encrypt', 'token'] as const) {
    const runs: Record<Side, LoadResult[]> = { before: [], after: [] };
    for (let r = 0; r < rounds; r++) {
      for (const side of ['before', 'after', 'after', 'before'] as const) {
        const result = await runLoad({ ...loads[side][path], seconds });
        if (result.errors > 0) throw new Error(`${path} on ${side}: ${result.errors} errors`);
        runs[side].push(result);
        console.log(
          `  ${path} ${side}: ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms`,
        );
      }
    }
    const after = mean(runs.after);
    const before = mean(runs.before);
    printResult({
      name: `before-after-${path}`,
      metric:
        path === 'encrypt'
          ? 'authenticated POST /api/v3/crypto/encrypt 1 KiB AES-256, this checkout'
          : 'client_credentials issuance over 64 workloads, this checkout',
      value: Math.round(after),
      baseline: `the same on ${BEFORE}, alternated`,
      baselineValue: Math.round(before),
      ratio: Number((after / before).toFixed(3)),
      unit: 'req/s',
      notes: `${tool}, ${connections} connections, ${rounds} x ABBA, ${seconds} s each; p50/p99 after ${mean(runs.after, (r) => r.p50Ms).toFixed(2)}/${mean(runs.after, (r) => r.p99Ms).toFixed(2)} ms, before ${mean(runs.before, (r) => r.p50Ms).toFixed(2)}/${mean(runs.before, (r) => r.p99Ms).toFixed(2)} ms`,
    });
  }
} finally {
  await Promise.all([sides.before.stop(), sides.after.stop()]);
}
