/**
 * Auth throughput (issues 3 and 16):
 * 1. client_credentials token issuance, tokens/s through the real API (POST /api/v3/auth/token,
 *    form body, target >= 5,000/s), beside two baselines measured in the same run: a bare
 *    Express app answering one GET route, and a bare node:http server. The requests rotate over
 *    the credentials of 64 workloads (the same ones as in 3), not one client over and over.
 * 2. The same route with and without bearer checking, called with an already-seen token:
 *    the ratio guarded/open (target >= 0.70).
 * 3. Issuance against a peer (target >= 2x): panva's oidc-provider 9, installed on
 *    demand outside the project (bench/lib/oidc-peer.ts; skipped with a message, and only this
 *    figure, when it cannot be installed). Fair by construction: both run on this bench's Node
 *    (process.execPath) as child processes on the same machine; 64 clients on each side, each
 *    holding a secret checked per request (Keyward: 64 workloads of one tenant whose role has
 *    the four runtime permissions; the peer: 64 static client_secret_post clients with the same
 *    client_id and secret), so the very same bodies (grant_type, client_id, client_secret; no
 *    scope, no resource: the peer's defaultResource names its one resource server) in the same
 *    rotation over the 64
 *    credentials, the same tool (runLoad: wrk, one thread), PEER_CONNECTIONS connections and
 *    `seconds` per run on both. Each side answers ES256-signed JWT access tokens, and one of
 *    each is verified with jose against the side's JWKS before measuring; every client of each
 *    side must answer 200 once, and a non-2xx during a measured run fails the bench. Measured
 *    Keyward, peer, Keyward, peer after a warm-up of each, so drift on this shared machine
 *    falls on both; the figure is the ratio of the means. Differences left: Keyward's token
 *    carries the workload's tenant and permission list, the peer's only its client and audience,
 *    and Keyward also writes a tallied audit event per token.
 * 4. issuance with the access log on (the default every figure here runs with) against
 *    a second service with ACCESS_LOG=off, alternated, 64 connections (target on/off >= 0.95).
 * BENCH_SECONDS (default 4), BENCH_CONNECTIONS (default 32; the peer comparison and 4 use 64).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyOptions } from 'jose';
import { runLoad, chooseTool, type LoadOptions, type LoadResult } from './lib/load.ts';
import { cleanEnv, freePort, startChild } from './lib/process.ts';
import { printResult } from './lib/result.ts';
import { provisionWorkloads, startKeyward, type WorkloadClient } from './lib/keyward.ts';
import { ensurePeer, startPeer } from './lib/oidc-peer.ts';
import { accessLogCost } from './lib/access-log.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const tool = chooseTool();
const root = new URL('..', import.meta.url).pathname;
const fmt = (r: LoadResult) =>
  `${Math.round(r.requestsPerSecond).toLocaleString('en')} req/s (p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, ${r.errors} errors)`;
const mean = (rs: LoadResult[]) => rs.reduce((a, r) => a + r.requestsPerSecond, 0) / rs.length;
const load = () =>
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;
/** wrk with 64 connections on both sides of the peer comparison. */
const PEER_CONNECTIONS = 64;
const CLIENTS = 64;
/** The runtime crypto permissions (spec: encrypt, decrypt, sign and verify). */
const RUNTIME = ['crypto.encrypt', 'crypto.decrypt', 'crypto.sign', 'crypto.verify'];
/** Nothing here may outlive this: a stuck child or generator fails the bench instead. */
const DEADLINE_MS = 10 * 60_000;

const tokenForm = (c: WorkloadClient) =>
  new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: c.clientId,
    client_secret: c.clientSecret,
  }).toString();

/** One POST of a token form; the access token, or an error naming the answer. */
async function fetchToken(url: string, form: string): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return (JSON.parse(text) as { access_token: string }).access_token;
}

/**
 * Before a side is measured: every client gets a 200 once (also the peer's first use of each
 * static client), and the first token verifies with jose against the side's JWKS as an ES256 JWT
 * for that client; returns its verified claims.
 */
async function checkSide(
  tokenUrl: string,
  jwksUrl: string,
  forms: string[],
  clientId: string,
  expect: JWTVerifyOptions,
): Promise<Record<string, unknown>> {
  const tokens = [];
  for (const form of forms) tokens.push(await fetchToken(tokenUrl, form));
  const jwks = createRemoteJWKSet(new URL(jwksUrl), { timeoutDuration: 10_000 });
  const { payload, protectedHeader } = await jwtVerify(tokens[0], jwks, {
    ...expect,
    algorithms: ['ES256'],
  });
  if (protectedHeader.alg !== 'ES256' || payload.client_id !== clientId)
    throw new Error(
      `${tokenUrl}: unexpected token ${JSON.stringify({ protectedHeader, payload })}`,
    );
  return payload;
}

/** How to stop each child started so far; the finally below and the watchdog run them. */
const running: Array<() => Promise<unknown>> = [];
const stopAll = () => Promise.allSettled(running.splice(0).map((stop) => stop()));
const watchdog = setTimeout(() => {
  console.error(`auth bench: still running after ${DEADLINE_MS / 1000} s; giving up`);
  void stopAll().finally(() => process.exit(1));
}, DEADLINE_MS);
const tokenDir = mkdtempSync(join(tmpdir(), 'keyward-bench-token-'));
running.push(async () => rmSync(tokenDir, { recursive: true, force: true }));
try {
  // Installed (or found in the cache) before anything is measured, so npm competes with nothing.
  const peerInstall = await ensurePeer();
  console.log(`auth bench start: ${load()}`);
  const keyward = await startKeyward();
  running.push(keyward.stop);
  const barePort = await freePort();
  const bare = await startChild(
    [join(root, 'bench/lib/bare-server.ts'), String(barePort)],
    cleanEnv(),
    `http://127.0.0.1:${barePort}/healthz`,
  );
  running.push(bare.stop);
  const guardedPort = await freePort();
  const guarded = await startChild(
    [join(root, 'bench/lib/guarded-server.ts'), String(guardedPort), join(tokenDir, 'token')],
    cleanEnv(),
    `http://127.0.0.1:${guardedPort}/healthz`,
    60_000,
  );
  running.push(guarded.stop);

  const { clients } = await provisionWorkloads(keyward, RUNTIME, CLIENTS);
  const forms = clients.map(tokenForm);
  const keywardTokenUrl = `${keyward.url}/api/v3/auth/token`;
  const claims = await checkSide(
    keywardTokenUrl,
    `${keyward.url}/.well-known/jwks.json`,
    forms,
    clients[0].clientId,
    { issuer: keyward.url, audience: 'service-core' },
  );
  if (RUNTIME.some((p) => !(claims.permissions as string[]).includes(p)))
    throw new Error(`Keyward's token lacks the runtime permissions: ${JSON.stringify(claims)}`);
  const tokenLoad = {
    url: keywardTokenUrl,
    connections,
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    bodies: forms,
    tool,
  } satisfies LoadOptions;
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
    target: { op: '>=', value: 5000, of: 'value', issue: 3 },
    notes: `${tool}, ${connections} connections, ${seconds} s, ${CLIENTS} workloads in turn; p50 ${issued.p50Ms.toFixed(2)} ms p99 ${issued.p99Ms.toFixed(2)} ms; bare node:http ${Math.round(bareRun.requestsPerSecond)} req/s`,
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
    target: { op: '>=', value: 0.7, of: 'ratio', issue: 3 },
    notes: `${tool}, ${connections} connections, 2x${seconds} s each (ABBA)`,
  });

  if (peerInstall.ok) {
    console.log(
      `oidc-provider ${peerInstall.version} from ${peerInstall.dir} (${peerInstall.installSeconds === null ? 'cached' : `installed in ${peerInstall.installSeconds.toFixed(1)} s`})`,
    );
    // The peer's clients are Keyward's workloads' credentials: the very same request bodies.
    const peer = await startPeer(peerInstall, clients, RUNTIME.join(' '));
    running.push(peer.stop);
    await checkSide(peer.tokenUrl, peer.jwksUrl, forms, clients[0].clientId, {
      issuer: peer.url,
      audience: peer.resource,
    });
    const sides = {
      keyward: { ...tokenLoad, connections: PEER_CONNECTIONS },
      peer: { ...tokenLoad, url: peer.tokenUrl, connections: PEER_CONNECTIONS },
    };
    console.log(`before the peer comparison: ${load()}`);
    await runLoad({ ...sides.keyward, seconds: 2 });
    await runLoad({ ...sides.peer, seconds: 2 });
    const pairs: Record<keyof typeof sides, LoadResult[]> = { keyward: [], peer: [] };
    for (const side of ['keyward', 'peer', 'keyward', 'peer'] as const) {
      const r = await runLoad({ ...sides[side], seconds });
      if (r.errors > 0) throw new Error(`${side}: ${r.errors} token requests failed: ${fmt(r)}`);
      pairs[side].push(r);
      console.log(`${side === 'keyward' ? 'Keyward      ' : 'oidc-provider'} ${fmt(r)}`);
    }
    await peer.stop();
    console.log(`after the peer comparison: ${load()}`);
    const ratio = mean(pairs.keyward) / mean(pairs.peer);
    const ps = (rs: LoadResult[]) =>
      rs.map((r) => `p50 ${r.p50Ms.toFixed(2)} p99 ${r.p99Ms.toFixed(2)} ms`).join(', ');
    console.log(`Keyward/oidc-provider ratio: ${ratio.toFixed(3)}  (target: >= 2)`);
    printResult({
      name: 'auth-token-vs-oidc-provider',
      metric: 'client_credentials tokens per second, ES256 JWT access tokens',
      value: Math.round(mean(pairs.keyward)),
      baseline: `oidc-provider ${peerInstall.version} (client_credentials, ES256 JWT, in-memory)`,
      baselineValue: Math.round(mean(pairs.peer)),
      ratio: Number(ratio.toFixed(3)),
      unit: 'tokens/s',
      target: { op: '>=', value: 2, of: 'ratio', issue: 29 },
      notes: `${tool}, ${PEER_CONNECTIONS} connections, ${CLIENTS} clients in turn each side, ABAB 2x${seconds} s; Keyward ${pairs.keyward.map((r) => Math.round(r.requestsPerSecond)).join('/')} (${ps(pairs.keyward)}), peer ${pairs.peer.map((r) => Math.round(r.requestsPerSecond)).join('/')} (${ps(pairs.peer)}); ${load()}`,
    });
  } else {
    console.log(
      `oidc-provider comparison skipped: it could not be installed (${peerInstall.reason.trim()})`,
    );
  }

  // The same issuance on a second service of this build with the access log off.
  const quiet = await startKeyward({ ACCESS_LOG: 'off' });
  running.push(quiet.stop);
  const quietClients = (await provisionWorkloads(quiet, RUNTIME, CLIENTS)).clients;
  const quietLoad = {
    ...tokenLoad,
    url: `${quiet.url}/api/v3/auth/token`,
    bodies: quietClients.map(tokenForm),
    connections: PEER_CONNECTIONS,
  };
  await runLoad({ ...quietLoad, seconds: 1 });
  await accessLogCost(
    'auth-token-access-log',
    'client_credentials issuance',
    {
      on: {
        pid: keyward.child.process.pid,
        run: () => runLoad({ ...tokenLoad, connections: PEER_CONNECTIONS, seconds }),
      },
      off: { pid: quiet.child.process.pid, run: () => runLoad({ ...quietLoad, seconds }) },
    },
    `${tool}, ${PEER_CONNECTIONS} connections, ${seconds} s each, ${CLIENTS} workloads in turn`,
  );
} finally {
  clearTimeout(watchdog);
  await stopAll();
}
