/**
 * Auth throughput (issue 3):
 * 1. client_credentials token issuance, tokens/s through the real API (POST /api/v3/auth/token,
 *    form body, target >= 5,000/s), beside two baselines measured in the same run: a bare
 *    Express app answering one GET route, and a bare node:http server.
 * 2. The same route with and without bearer checking, called with an already-seen token:
 *    the ratio guarded/open (target >= 0.70).
 * BENCH_SECONDS (default 4), BENCH_CONNECTIONS (default 32).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoad, chooseTool, type LoadResult } from './lib/load.ts';
import { cleanEnv, freePort, startChild } from './lib/process.ts';
import { printResult } from './lib/result.ts';
import { provision, startKeyward } from './lib/keyward.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const tool = chooseTool();
const root = new URL('..', import.meta.url).pathname;
const fmt = (r: LoadResult) =>
  `${Math.round(r.requestsPerSecond).toLocaleString('en')} req/s (p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, ${r.errors} errors)`;

const keyward = await startKeyward();
const barePort = await freePort();
const bare = await startChild(
  [join(root, 'bench/lib/bare-server.ts'), String(barePort)],
  cleanEnv(),
  `http://127.0.0.1:${barePort}/healthz`,
);
const guardedPort = await freePort();
const tokenDir = mkdtempSync(join(tmpdir(), 'keyward-bench-token-'));
const guarded = await startChild(
  [join(root, 'bench/lib/guarded-server.ts'), String(guardedPort), join(tokenDir, 'token')],
  cleanEnv(),
  `http://127.0.0.1:${guardedPort}/healthz`,
  60_000,
);
try {
  const t = await provision(keyward, ['crypto.keys.read'], []);
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: t.clientId,
    client_secret: t.clientSecret,
  }).toString();
  const tokenLoad = {
    url: `${keyward.url}/api/v3/auth/token`,
    connections,
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form,
    tool,
  };
  await runLoad({ ...tokenLoad, seconds: 1 });
  const issued = await runLoad({ ...tokenLoad, seconds });
  if (issued.errors > 0) throw new Error(`${issued.errors} token requests failed`);
  const bareRun = await runLoad({
    url: `http://127.0.0.1:${barePort}/healthz`,
    connections,
    seconds,
    tool,
  });
  const expressRun = await runLoad({
    url: `http://127.0.0.1:${guardedPort}/open`,
    connections,
    seconds,
    tool,
  });
  console.log(`client_credentials issuance: ${fmt(issued)}`);
  console.log(`bare Express, one GET route: ${fmt(expressRun)}`);
  console.log(`bare node:http baseline:     ${fmt(bareRun)}`);
  console.log(
    `issuance/bare Express ratio: ${(issued.requestsPerSecond / expressRun.requestsPerSecond).toFixed(3)}  (target: >= 5,000 tokens/s)`,
  );
  printResult({
    name: 'auth-token-issuance',
    metric: 'client_credentials tokens per second',
    value: Math.round(issued.requestsPerSecond),
    baseline: 'bare Express, one GET route',
    baselineValue: Math.round(expressRun.requestsPerSecond),
    ratio: Number((issued.requestsPerSecond / expressRun.requestsPerSecond).toFixed(3)),
    unit: 'tokens/s',
    notes: `${tool}, ${connections} connections, ${seconds} s; target >= 5000/s; p50 ${issued.p50Ms.toFixed(2)} ms p99 ${issued.p99Ms.toFixed(2)} ms; bare node:http ${Math.round(bareRun.requestsPerSecond)} req/s`,
  });

  const token = readFileSync(join(tokenDir, 'token'), 'utf8');
  const g = { connections, seconds, tool };
  await runLoad({
    ...g,
    url: `http://127.0.0.1:${guardedPort}/guarded`,
    headers: { Authorization: `Bearer ${token}` },
    seconds: 1,
  });
  const runs: Record<'open' | 'guarded', LoadResult[]> = { open: [], guarded: [] };
  for (const which of ['open', 'guarded', 'guarded', 'open'] as const) {
    runs[which].push(
      await runLoad({
        ...g,
        url: `http://127.0.0.1:${guardedPort}/${which}`,
        headers: { Authorization: `Bearer ${token}` },
      }),
    );
  }
  const mean = (rs: LoadResult[]) => rs.reduce((a, r) => a + r.requestsPerSecond, 0) / rs.length;
  if ([...runs.open, ...runs.guarded].some((r) => r.errors > 0))
    throw new Error('requests failed in the bearer-check measurement');
  const ratio = mean(runs.guarded) / mean(runs.open);
  console.log(
    `route without auth:          ${Math.round(mean(runs.open)).toLocaleString('en')} req/s`,
  );
  console.log(
    `same route, bearer checked:  ${Math.round(mean(runs.guarded)).toLocaleString('en')} req/s`,
  );
  console.log(`guarded/open ratio: ${ratio.toFixed(3)}  (target: >= 0.70)`);
  printResult({
    name: 'auth-bearer-check',
    metric: 'requests per second behind bearer checking (seen token)',
    value: Math.round(mean(runs.guarded)),
    baseline: 'same route without authentication',
    baselineValue: Math.round(mean(runs.open)),
    ratio: Number(ratio.toFixed(3)),
    unit: 'req/s',
    notes: `${tool}, ${connections} connections, 2x${seconds} s each (ABBA); target ratio >= 0.70`,
  });
} finally {
  await keyward.stop();
  await bare.stop();
  await guarded.stop();
  rmSync(tokenDir, { recursive: true, force: true });
}
