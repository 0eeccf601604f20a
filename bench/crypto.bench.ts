/**
 * Core API throughput, all against baselines measured in the same run:
 * 1. Authenticated POST /api/v3/crypto/encrypt of 1 KiB with an AES-256 key, keep-alive,
 *    64 connections, one API process, vs a bare node:http server echoing the same body
 *    (target ratio >= 0.60), with p50/p99; and, for context, the "encrypt floor": the same
 *    bare server doing only what any encrypt must (JSON, AES-GCM, compact JWE); the token endpoint's ratio,
 *    the API against that floor measured alternately (target >= 0.80), with p99.
 * 2. The same with WEB_CONCURRENCY=2 (node:cluster, on Postgres): throughput should grow.
 * 3. RSA-2048 sign through the API vs single-threaded crypto.sign in this process (target >= 1.5x),
 *    one signature per request and in the batch form (16 per request).
 * 4. ES256 sign through the API vs the encrypt throughput (target >= 0.5).
 * 5. the 1 KiB encrypt with the access log on (the default every figure here runs with)
 *    against a second service with ACCESS_LOG=off, alternated (target on/off >= 0.95), with p99.
 * BENCH_SECONDS (default 4), BENCH_PG (default postgres://postgres@127.0.0.1:5432/test).
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { join } from 'node:path';
import knexFactory from 'knex';
import { runLoad, chooseTool, type LoadResult } from './lib/load.ts';
import { cleanEnv, freePort, startChild } from './lib/process.ts';
import { printResult } from './lib/result.ts';
import { provision, startKeyward } from './lib/keyward.ts';
import { accessLogCost } from './lib/access-log.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const connections = 64;
const tool = chooseTool();
const root = new URL('..', import.meta.url).pathname;
const PERMS = ['crypto.encrypt', 'crypto.sign', 'crypto.keys.read'];
const KEYS = [
  { kid: 'aes', type: 'aes-256' },
  { kid: 'rsa', type: 'rsa-2048', usage: 'sign' },
  { kid: 'es', type: 'ec-p256', usage: 'sign' },
];
const fmt = (r: LoadResult) =>
  `${Math.round(r.requestsPerSecond).toLocaleString('en')} req/s (p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, ${r.errors} errors)`;

const body = JSON.stringify({ kid: 'aes', data: randomBytes(1024).toString('base64') });
const json = (token?: string) => ({
  'Content-Type': 'application/json',
  ...(token ? { Authorization: `Bearer ${token}` } : {}),
});

async function measure(
  url: string,
  token: string | undefined,
  payload: string,
  secs = seconds,
): Promise<LoadResult> {
  const r = await runLoad({
    url,
    connections,
    seconds: secs,
    tool,
    method: 'POST',
    headers: json(token),
    body: payload,
  });
  if (r.errors > 0) throw new Error(`${r.errors} failed requests against ${url}`);
  return r;
}

/** Single-threaded RSA-2048 PKCS#1 v1.5 signatures per second with Node's crypto.sign. */
function nodeRsaSignRate(): number {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const data = Buffer.from('bench');
  let n = 0;
  const end = performance.now() + 2000;
  while (performance.now() < end) {
    sign('sha256', data, privateKey);
    n += 1;
  }
  return n / 2;
}

const barePort = await freePort();
const bare = await startChild(
  [join(root, 'bench/lib/bare-server.ts'), String(barePort)],
  cleanEnv(),
  `http://127.0.0.1:${barePort}/healthz`,
);
const one = await startKeyward();
try {
  const t = await provision(one, PERMS, KEYS);
  const enc = `${one.url}/api/v3/crypto/encrypt`;
  await measure(enc, t.token, body, 1);
  const encrypt = [await measure(enc, t.token, body)];
  const echo = [
    await measure(`http://127.0.0.1:${barePort}/echo`, undefined, body),
    await measure(`http://127.0.0.1:${barePort}/echo`, undefined, body),
  ];
  encrypt.push(await measure(enc, t.token, body));
  const mean = (rs: LoadResult[], f: (r: LoadResult) => number = (r) => r.requestsPerSecond) =>
    rs.reduce((a, r) => a + f(r), 0) / rs.length;
  // The API against the floor, alternated (encrypt, floor, encrypt, floor).
  const floorUrl = `http://127.0.0.1:${barePort}/encrypt-floor`;
  await measure(floorUrl, undefined, body, 1);
  const floors = [await measure(floorUrl, undefined, body)];
  const againstFloor = [await measure(enc, t.token, body)];
  floors.push(await measure(floorUrl, undefined, body));
  againstFloor.push(await measure(enc, t.token, body));
  const floor = floors[0];
  const encRps = mean(encrypt);
  const echoRps = mean(echo);
  console.log(`encrypt 1 KiB (1 process): ${encrypt.map(fmt).join(' | ')}`);
  console.log(`bare echo of the same body: ${echo.map(fmt).join(' | ')}`);
  console.log(`encrypt/echo ratio: ${(encRps / echoRps).toFixed(3)} (target >= 0.60)`);
  // Context for the target: the least any encrypt endpoint does (bare-server.ts /encrypt-floor).
  console.log(
    `encrypt floor (JSON + AES-GCM + compact JWE on bare node:http, no auth or bookkeeping): ${fmt(floor)}; floor/echo ${(floor.requestsPerSecond / echoRps).toFixed(3)}, encrypt/floor ${(encRps / floor.requestsPerSecond).toFixed(3)}`,
  );
  printResult({
    name: 'crypto-encrypt',
    metric: 'authenticated POST /api/v3/crypto/encrypt 1 KiB AES-256, 1 process',
    value: Math.round(encRps),
    baseline: 'bare node:http echo of the same body',
    baselineValue: Math.round(echoRps),
    ratio: Number((encRps / echoRps).toFixed(3)),
    unit: 'req/s',
    target: { op: '>=', value: 0.6, of: 'ratio', issue: 5 },
    notes: `${tool}, 64 connections, ABBA ${seconds} s; encrypt floor (bare node:http, JSON + AES-GCM + JWE only) ${Math.round(floor.requestsPerSecond)} req/s = ${(floor.requestsPerSecond / echoRps).toFixed(3)} of echo; p50/p99 encrypt ${mean(encrypt, (r) => r.p50Ms).toFixed(2)}/${mean(encrypt, (r) => r.p99Ms).toFixed(2)} ms, echo ${mean(echo, (r) => r.p50Ms).toFixed(2)}/${mean(echo, (r) => r.p99Ms).toFixed(2)} ms`,
  });

  const floorRps = mean(floors);
  const viaApi = mean(againstFloor);
  console.log(
    `encrypt vs floor, alternated: API ${againstFloor.map(fmt).join(' | ')}; floor ${floors.map(fmt).join(' | ')}; ratio ${(viaApi / floorRps).toFixed(3)} (target >= 0.80)`,
  );
  printResult({
    name: 'crypto-encrypt-vs-floor',
    metric:
      'authenticated POST /api/v3/crypto/encrypt 1 KiB (bearer, key lookup, rate limit, audit, metrics)',
    value: Math.round(viaApi),
    baseline: 'encrypt floor: bare node:http, same JSON parse, AES-256-GCM and compact JWE',
    baselineValue: Math.round(floorRps),
    ratio: Number((viaApi / floorRps).toFixed(3)),
    unit: 'req/s',
    target: { op: '>=', value: 0.8, of: 'ratio', issue: 29 },
    notes: `${tool}, 64 connections, API, floor, API, floor ${seconds} s each; p50/p99 API ${mean(againstFloor, (r) => r.p50Ms).toFixed(2)}/${mean(againstFloor, (r) => r.p99Ms).toFixed(2)} ms, floor ${mean(floors, (r) => r.p50Ms).toFixed(2)}/${mean(floors, (r) => r.p99Ms).toFixed(2)} ms`,
  });

  const signBody = (kid: string) =>
    JSON.stringify({
      kid,
      data: Buffer.from('sign me, 1 KiB would be the same cost').toString('base64'),
    });
  const rsa = await measure(`${one.url}/api/v3/crypto/sign`, t.token, signBody('rsa'));
  const nodeRate = nodeRsaSignRate();
  console.log(
    `RSA-2048 sign via API: ${fmt(rsa)}; Node crypto.sign single thread: ${Math.round(nodeRate).toLocaleString('en')}/s; ratio ${(rsa.requestsPerSecond / nodeRate).toFixed(2)} (target >= 1.5)`,
  );
  printResult({
    name: 'crypto-sign-rsa2048',
    metric: 'RSA-2048 sign through the API',
    value: Math.round(rsa.requestsPerSecond),
    baseline: 'single-threaded crypto.sign',
    baselineValue: Math.round(nodeRate),
    ratio: Number((rsa.requestsPerSecond / nodeRate).toFixed(2)),
    unit: 'signatures/s',
    target: { op: '>=', value: 1.5, of: 'ratio', issue: 5 },
    notes: `${tool}, 64 connections`,
  });
  // The batch form signs its items concurrently on libuv's pool: the HTTP cost is
  // shared by BATCH signatures, so this shows what the pool does with both cores.
  const BATCH = 16;
  const batchBody = JSON.stringify({
    items: Array.from({ length: BATCH }, () => JSON.parse(signBody('rsa'))),
  });
  const rsaBatch = await measure(`${one.url}/api/v3/crypto/sign`, t.token, batchBody);
  const batchRate = rsaBatch.requestsPerSecond * BATCH;
  console.log(
    `RSA-2048 sign via API, batches of ${BATCH}: ${Math.round(batchRate).toLocaleString('en')} signatures/s (${fmt(rsaBatch)}); ratio to single-thread ${(batchRate / nodeRate).toFixed(2)}`,
  );
  printResult({
    name: 'crypto-sign-rsa2048-batch',
    metric: `RSA-2048 sign through the API, batch form (${BATCH} items per request)`,
    value: Math.round(batchRate),
    baseline: 'single-threaded crypto.sign',
    baselineValue: Math.round(nodeRate),
    ratio: Number((batchRate / nodeRate).toFixed(2)),
    unit: 'signatures/s',
    notes: `${tool}, 64 connections; the single-request figure is crypto-sign-rsa2048`,
  });
  const es = await measure(`${one.url}/api/v3/crypto/sign`, t.token, signBody('es'));
  console.log(
    `ES256 sign via API: ${fmt(es)}; ratio to encrypt ${(es.requestsPerSecond / encRps).toFixed(2)} (target >= 0.5)`,
  );
  printResult({
    name: 'crypto-sign-es256',
    metric: 'ES256 sign through the API',
    value: Math.round(es.requestsPerSecond),
    baseline: 'encrypt 1 KiB throughput (same run)',
    baselineValue: Math.round(encRps),
    ratio: Number((es.requestsPerSecond / encRps).toFixed(2)),
    unit: 'req/s',
    target: { op: '>=', value: 0.5, of: 'ratio', issue: 5 },
    notes: `${tool}, 64 connections`,
  });

  // The same encrypt on a second service of this build with the access log off.
  const quiet = await startKeyward({ ACCESS_LOG: 'off' });
  try {
    const q = await provision(quiet, PERMS, KEYS);
    const quietEnc = `${quiet.url}/api/v3/crypto/encrypt`;
    await measure(quietEnc, q.token, body, 1);
    await accessLogCost(
      'crypto-encrypt-access-log',
      'encrypt 1 KiB',
      {
        on: { pid: one.child.process.pid, run: () => measure(enc, t.token, body) },
        off: { pid: quiet.child.process.pid, run: () => measure(quietEnc, q.token, body) },
      },
      `${tool}, 64 connections, ${seconds} s each`,
    );
  } finally {
    await quiet.stop();
  }
} finally {
  await one.stop();
}

// WEB_CONCURRENCY=2: the cluster needs a shared Postgres (PGlite serves one process); a fresh database per run.
const pgBase = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
const admin = knexFactory({ client: 'pg', connection: pgBase });
const clustered: Record<string, number> = {};
try {
  for (const n of ['1', '2']) {
    const dbName = `kw_bench_${randomBytes(4).toString('hex')}`;
    await admin.raw(`create database ${dbName}`);
    const dbUrl = new URL(pgBase);
    dbUrl.pathname = `/${dbName}`;
    const k = await startKeyward({ DATABASE_URL: dbUrl.toString(), WEB_CONCURRENCY: n });
    try {
      const t = await provision(k, PERMS, [{ kid: 'aes', type: 'aes-256' }]);
      await measure(`${k.url}/api/v3/crypto/encrypt`, t.token, body, 1);
      const r = await measure(`${k.url}/api/v3/crypto/encrypt`, t.token, body);
      clustered[n] = r.requestsPerSecond;
      console.log(`encrypt on Postgres, WEB_CONCURRENCY=${n}: ${fmt(r)}`);
    } finally {
      await k.stop();
      await admin.raw(`drop database if exists ${dbName} with (force)`);
    }
  }
} finally {
  await admin.destroy();
  await bare.stop();
}
const growth = clustered['2'] / clustered['1'];
console.log(`WEB_CONCURRENCY=2 / 1: ${growth.toFixed(2)}`);
printResult({
  name: 'crypto-encrypt-cluster',
  metric: 'encrypt 1 KiB with WEB_CONCURRENCY=2',
  value: Math.round(clustered['2']),
  baseline: 'WEB_CONCURRENCY=1, same database',
  baselineValue: Math.round(clustered['1']),
  ratio: Number(growth.toFixed(2)),
  unit: 'req/s',
  target: { op: '>', value: 1, of: 'ratio', issue: 5 },
  notes: `${tool} (1 thread) shares the 2 cores with the API processes`,
});
