/**
 * Requests per second of GET /healthz through the real Keyward app (node api/server.ts, the whole
 * middleware chain: request id, child logger, metrics, router) against a bare node:http server
 * answering the same body, both child processes on this Node 24, under the same closed-loop load.
 * The ratio is the cost of the framework and middleware per request.
 *
 * BENCH_SECONDS (default 4) per measured round; two rounds per server in A B B A order so neither
 * side profits from running second; BENCH_CONNECTIONS (default 32); BENCH_LOAD=node|wrk.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { chooseTool, runLoad, type LoadResult } from './lib/load.ts';
import { cleanEnv, freePort, startChild, type Child } from './lib/process.ts';
import { printResult } from './lib/result.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const tool = chooseTool();
const root = new URL('..', import.meta.url).pathname;

const dataDir = mkdtempSync(join(tmpdir(), 'keyward-bench-'));
const children: Child[] = [];

function summary(r: LoadResult): string {
  return `${Math.round(r.requestsPerSecond).toLocaleString('en')} req/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, ${r.errors} errors`;
}

function mean(rs: LoadResult[], pick: (r: LoadResult) => number): number {
  return rs.reduce((a, r) => a + pick(r), 0) / rs.length;
}

try {
  const [appPort, barePort] = [await freePort(), await freePort()];
  const appUrl = `http://127.0.0.1:${appPort}/healthz`;
  const bareUrl = `http://127.0.0.1:${barePort}/healthz`;
  children.push(
    await startChild(
      [join(root, 'api/server.ts')],
      cleanEnv({
        PORT: String(appPort),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        KEYWARD_MASTER_KEY: randomBytes(32).toString('base64'),
        KEYWARD_BOOTSTRAP_ADMIN_EMAIL: 'bench@keyward.local',
        KEYWARD_BOOTSTRAP_ADMIN_PASSWORD: randomBytes(18).toString('base64url'),
      }),
      appUrl,
      60_000,
    ),
  );
  children.push(
    await startChild(
      [join(root, 'bench/lib/bare-server.ts'), String(barePort)],
      cleanEnv(),
      bareUrl,
    ),
  );

  console.log(
    `healthz: ${tool} load, ${connections} keep-alive connections, ${seconds} s rounds, Node ${process.version}`,
  );
  // Warm-up: JIT and connection setup are not what is measured.
  await runLoad({ url: appUrl, connections, seconds: 1, tool });
  await runLoad({ url: bareUrl, connections, seconds: 1, tool });

  const app: LoadResult[] = [];
  const bare: LoadResult[] = [];
  for (const [label, url, into] of [
    ['keyward', appUrl, app],
    ['bare', bareUrl, bare],
    ['bare', bareUrl, bare],
    ['keyward', appUrl, app],
  ] as const) {
    const r = await runLoad({ url, connections, seconds, tool });
    console.log(`  ${label.padEnd(8)} ${summary(r)}`);
    into.push(r);
  }
  const errors = [...app, ...bare].reduce((a, r) => a + r.errors, 0);
  if (errors > 0) throw new Error(`${errors} requests failed during the measurement`);

  const appRps = mean(app, (r) => r.requestsPerSecond);
  const bareRps = mean(bare, (r) => r.requestsPerSecond);
  const ratio = appRps / bareRps;
  console.log(`Keyward (Express 5) /healthz: ${Math.round(appRps).toLocaleString('en')} req/s`);
  console.log(`bare node:http      /healthz: ${Math.round(bareRps).toLocaleString('en')} req/s`);
  console.log(`ratio Keyward/bare: ${ratio.toFixed(3)}`);
  printResult({
    name: 'healthz',
    metric: 'GET /healthz requests per second',
    value: Math.round(appRps),
    baseline: 'bare node:http, same body',
    baselineValue: Math.round(bareRps),
    ratio: Number(ratio.toFixed(3)),
    unit: 'req/s',
    notes:
      `${tool}${tool === 'wrk' ? ' -t1' : ''}, ${connections} connections, 2x${seconds} s per server (ABBA); p50/p99 keyward ` +
      `${mean(app, (r) => r.p50Ms).toFixed(2)}/${mean(app, (r) => r.p99Ms).toFixed(2)} ms, bare ${mean(bare, (r) => r.p50Ms).toFixed(2)}/${mean(bare, (r) => r.p99Ms).toFixed(2)} ms`,
  });
} finally {
  for (const child of children.reverse()) await child.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
