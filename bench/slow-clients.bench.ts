/**
 * Slow clients: the service (node api/server.ts on its defaults, but for the
 * body and header deadlines, shortened so the run takes seconds) is started under an open-file
 * limit of NOFILE (default 600, through prlimit), and an attacker without credentials opens
 * ATTACK (default 640) connections from 127.0.0.2-9, each a POST /api/v3/auth/token announcing
 * 1000 bytes and sending 11. Meanwhile a probe opens a fresh connection from 127.0.0.1 for
 * GET /healthz every PROBE_MS (default 100). Printed: how many attack connections the server
 * still holds over time, how each ended (408, 503, closed unanswered) and when, and the probes
 * that succeeded during the attack against the same number of probes before it (the baseline).
 *
 * BODY_IDLE_TIMEOUT_MS (default 2000), SMALL_BODY_TIMEOUT_MS (default 5000) and
 * HEADERS_TIMEOUT_MS (default 5000) are passed through to the service.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { cleanEnv, freePort, startChild, type Child } from './lib/process.ts';
import { printResult } from './lib/result.ts';

const NOFILE = Number(process.env.NOFILE ?? 600);
const ATTACK = Number(process.env.ATTACK ?? 640);
const PROBE_MS = Number(process.env.PROBE_MS ?? 100);
const limits = {
  BODY_IDLE_TIMEOUT_MS: process.env.BODY_IDLE_TIMEOUT_MS ?? '2000',
  SMALL_BODY_TIMEOUT_MS: process.env.SMALL_BODY_TIMEOUT_MS ?? '5000',
  HEADERS_TIMEOUT_MS: process.env.HEADERS_TIMEOUT_MS ?? '5000',
};
const root = new URL('..', import.meta.url).pathname;

interface Ended {
  status: number;
  ms: number;
}

/** One stalled token request; resolves with its status (0: none) and when the server closed it. */
function stalled(port: number, localAddress: string, t0: number): Promise<Ended> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    let head = '';
    socket.on('data', (c: Buffer) => (head += c.toString('latin1')));
    socket.on('error', () => undefined);
    socket.once('close', () => {
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
        ms: performance.now() - t0,
      });
    });
    socket.once('connect', () =>
      socket.write(
        'POST /api/v3/auth/token HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n' +
          'grant_type=',
      ),
    );
    // A server that holds it longer than this is the defect itself: give up and count it.
    setTimeout(() => socket.destroy(), 60_000).unref();
  });
}

/** One health probe on a fresh connection: true on a 200 within a second. */
function probe(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let head = '';
    const done = (ok: boolean) => {
      clearTimeout(guard);
      socket.destroy();
      resolve(ok);
    };
    const guard = setTimeout(() => done(false), 1000);
    socket.on('data', (c: Buffer) => {
      head += c.toString('latin1');
      if (head.includes('\r\n\r\n')) done(head.startsWith('HTTP/1.1 200'));
    });
    socket.on('error', () => done(false));
    socket.once('connect', () =>
      socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    );
  });
}

async function probes(port: number, until: () => boolean): Promise<{ ok: number; all: number }> {
  let ok = 0;
  let all = 0;
  while (!until()) {
    const next = new Promise((r) => setTimeout(r, PROBE_MS));
    all += 1;
    if (await probe(port)) ok += 1;
    await next;
  }
  return { ok, all };
}

const dataDir = mkdtempSync(join(tmpdir(), 'keyward-bench-'));
let child: Child | null = null;
try {
  const port = await freePort();
  child = await startChild(
    [join(root, 'api/server.ts')],
    cleanEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      KEYWARD_MASTER_KEY: randomBytes(32).toString('base64'),
      KEYWARD_BOOTSTRAP_ADMIN_EMAIL: 'bench@keyward.local',
      KEYWARD_BOOTSTRAP_ADMIN_PASSWORD: randomBytes(18).toString('base64url'),
      ...limits,
    }),
    `http://127.0.0.1:${port}/healthz`,
    60_000,
    [`prlimit`, `--nofile=${NOFILE}:${NOFILE}`, '--'],
  );
  console.log(
    `service under ulimit -n ${NOFILE}, ${JSON.stringify(limits)}, other settings default`,
  );

  // Baseline: the same number of probes as the attack will see, before it.
  let baselineLeft = 0;
  const attackT0 = performance.now();
  let attackOver = false;
  const ends: Ended[] = [];
  const attack = Array.from({ length: ATTACK }, (_, i) =>
    stalled(port, `127.0.0.${2 + (i % 8)}`, attackT0).then((e) => ends.push(e)),
  );
  const duringP = probes(port, () => attackOver);
  const samples: string[] = [];
  const sampler = setInterval(() => {
    const t = ((performance.now() - attackT0) / 1000).toFixed(1);
    samples.push(`${t}s:${ATTACK - ends.length}`);
  }, 500);
  await Promise.all(attack);
  attackOver = true;
  clearInterval(sampler);
  const during = await duringP;
  baselineLeft = during.all;
  const before = await probes(port, () => baselineLeft-- <= 0);

  const byStatus = new Map<number, number[]>();
  for (const e of ends) byStatus.set(e.status, [...(byStatus.get(e.status) ?? []), e.ms]);
  console.log(`attack connections still held, sampled every 0.5 s: ${samples.join(' ')}`);
  for (const [status, times] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    times.sort((a, b) => a - b);
    const at = (q: number) => (times[Math.floor(q * (times.length - 1))] / 1000).toFixed(2);
    console.log(
      `  ended ${status === 0 ? 'unanswered' : status}: ${times.length} connections, closed after min ${at(0)} s, median ${at(0.5)} s, max ${at(1)} s`,
    );
  }
  const lastClose = Math.max(...ends.map((e) => e.ms)) / 1000;
  console.log(
    `/healthz during the attack: ${during.ok}/${during.all} answered 200; after it (baseline): ${before.ok}/${before.all}; every attack connection closed by ${lastClose.toFixed(2)} s`,
  );
  const share = (r: { ok: number; all: number }) => (r.all ? r.ok / r.all : 0);
  printResult({
    name: 'healthz under a slow-client flood',
    metric: `share of /healthz probes answered 200 while ${ATTACK} stalled token bodies were sent (ulimit -n ${NOFILE})`,
    value: Number(share(during).toFixed(3)),
    baseline: 'the same probes with no attack',
    baselineValue: Number(share(before).toFixed(3)),
    ratio: Number((share(during) / (share(before) || 1)).toFixed(3)),
    unit: 'share',
    notes: `all attack connections closed by ${lastClose.toFixed(1)} s; ${[...byStatus].map(([s, t]) => `${s || 'unanswered'}: ${t.length}`).join(', ')}`,
  });
} finally {
  await child?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
