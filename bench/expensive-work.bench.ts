/**
 * Expensive work whose cost the caller sets, as an attacker would send it, against one API
 * process on `npm start`'s defaults (docs/expensive-work.md). Bounded: a few tens of seconds.
 *
 * 1. Ten PWRI conversions in a row with BENCH_PWRI_ITERATIONS (default 1,000,000; a second
 *    series at the engine's cap, 100,000) while /healthz is probed in a closed loop: the API's
 *    CPU seconds, how many times /healthz answered, its p99 and its longest gap.
 * 2. One tenant keeps 4, then 8, RSA-4096 GenerateDataKeyPair requests in flight (AWS KMS API)
 *    for BENCH_SECONDS while another tenant signs with RSA-2048 (data mode) in a loop: that
 *    tenant's Sign p50/p99, against a quiet baseline; the generations' answers by status.
 *
 * BENCH_KEYWARD_ROOT runs another checkout's api/server.ts (older code, for before/after).
 * Two RESULT lines, report-only: /healthz's rate during the first PWRI series against a quiet
 * second of probing, and the other tenant's Sign p99 with 8 generations in flight against quiet.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, convertOverHttp } from './lib/cms.ts';
import { adminToken, provision, startKeyward } from './lib/keyward.ts';
import { signedRequest } from '../support/sigv4.ts';
import { pwriEnvelope } from '../support/fixtures/pwri.ts';
import { printResult } from './lib/result.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 6);
const root = process.env.BENCH_KEYWARD_ROOT ?? fileURLToPath(new URL('..', import.meta.url));
const iterations = (process.env.BENCH_PWRI_ITERATIONS ?? '1000000,100000').split(',').map(Number);
const PASSWORD = 'correct horse battery';

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x: number) => `${x.toFixed(1)} ms`;
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** One GET /healthz over a kept-alive connection; its latency in ms (or NaN on failure). */
function healthz(url: string, agent: Agent): Promise<number> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const req = request(`${url}/healthz`, { agent, timeout: 20_000 }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode === 200 ? performance.now() - t0 : NaN));
    });
    req.once('error', () => resolve(NaN));
    req.once('timeout', () => req.destroy());
    req.end();
  });
}

/** Probes /healthz back to back until stop() (closed loop, one connection). */
function prober(url: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  const at: number[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const l = await healthz(url, agent);
      if (!Number.isNaN(l)) {
        latencies.push(l);
        at.push(performance.now());
      }
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      agent.destroy();
      const gaps = at.slice(1).map((t, i) => t - at[i]);
      return { answers: latencies.length, p99: pct(latencies, 99), maxGap: Math.max(0, ...gaps) };
    },
  };
}

const dir = mkdtempSync(join(tmpdir(), 'expensive-bench-'));
console.log(`server: ${root}; load average ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
const k = await startKeyward({}, root);
try {
  const pid = k.child.process.pid!;
  // --- 1. PWRI conversions ---
  const content = randomBytes(4096);
  for (const n of iterations)
    writeFileSync(join(dir, `${n}.der`), pwriEnvelope(content, PASSWORD, n));
  const conv = await provision(
    k,
    ['migration.convert', 'crypto.decrypt'],
    [{ kid: 'target', type: 'ec-p256', usage: 'encrypt' }],
  );
  const metadata = JSON.stringify({ password: PASSWORD, targetKid: 'target' });
  const quietProbe = prober(k.url);
  await sleep(1000);
  const quietHealthz = await quietProbe.stop();
  console.log(
    `/healthz, quiet: ${quietHealthz.answers} answers in 1 s, p99 ${ms(quietHealthz.p99)}`,
  );
  let pwriRate = NaN;
  for (const n of iterations) {
    const probe = prober(k.url);
    await sleep(300);
    const cpu0 = cpuSeconds(pid);
    const t0 = performance.now();
    const statuses = new Map<number, number>();
    for (let i = 0; i < 10; i++) {
      const r = await convertOverHttp(k.url, conv.token, join(dir, `${n}.der`), metadata);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
    const wall = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds(pid) - cpu0;
    const h = await probe.stop();
    if (Number.isNaN(pwriRate)) pwriRate = h.answers / wall;
    console.log(
      `PWRI ${n.toLocaleString('en')} iterations x10: ${wall.toFixed(2)} s, API CPU ${cpu.toFixed(2)} s, statuses ${JSON.stringify(Object.fromEntries(statuses))}; /healthz ${h.answers} answers (${(h.answers / wall).toFixed(0)}/s), p99 ${ms(h.p99)}, longest gap ${ms(h.maxGap)}`,
    );
  }

  // --- 2. RSA-4096 GenerateDataKeyPair against another tenant's signing ---
  const gen = await provision(k, ['crypto.generate-data-key'], [{ kid: 'wrap', type: 'aes-256' }]);
  const admin = await adminToken(k);
  const base = `${k.url}/api/v3/admin/tenants/${gen.tenantId}/workloads`;
  const auth = { authorization: `Bearer ${admin}`, 'content-type': 'application/json' };
  const workloads = (await (await fetch(base, { headers: auth })).json()) as {
    items: Array<{ id: string }>;
  };
  const created = await fetch(`${base}/${workloads.items[0].id}/access-keys`, {
    method: 'POST',
    headers: auth,
    body: '{}',
  });
  if (created.status !== 201) throw new Error(`access key: ${created.status}`);
  const key = (await created.json()) as { accessKeyId: string; secretAccessKey: string };
  const signer = await provision(
    k,
    ['crypto.sign'],
    [{ kid: 'rsa', type: 'rsa-2048', usage: 'sign' }],
  );
  const signBody = JSON.stringify({ kid: 'rsa', data: randomBytes(256).toString('base64') });
  const signAgent = new Agent({ keepAlive: true, maxSockets: 1 });

  /** Signs in a loop for `secs`: latencies in ms. */
  const signLoop = async (secs: number): Promise<number[]> => {
    const out: number[] = [];
    const end = performance.now() + secs * 1000;
    while (performance.now() < end) {
      const t0 = performance.now();
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          `${k.url}/api/v3/crypto/sign`,
          {
            method: 'POST',
            agent: signAgent,
            headers: {
              authorization: `Bearer ${signer.token}`,
              'content-type': 'application/json',
            },
          },
          (res) => {
            res.resume();
            res.once('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.once('error', reject);
        req.end(signBody);
      });
      if (status !== 200) throw new Error(`sign answered ${status}`);
      out.push(performance.now() - t0);
    }
    return out;
  };

  const quiet = await signLoop(2);
  console.log(
    `Sign RSA-2048, quiet: ${quiet.length} signatures, p50 ${ms(pct(quiet, 50))}, p99 ${ms(pct(quiet, 99))}`,
  );
  let signP99At8 = NaN;
  for (const inFlight of [4, 8]) {
    const body = JSON.stringify({ KeyId: 'wrap', KeyPairSpec: 'RSA_4096' });
    const statuses = new Map<string, number>();
    const aborts = new AbortController();
    let running = true;
    const cpu0 = cpuSeconds(pid);
    const loops = Array.from({ length: inFlight }, async () => {
      while (running) {
        const s = signedRequest(k.url, key, 'TrentService.GenerateDataKeyPair', body);
        let label: string;
        try {
          const r = await fetch(`${k.url}/`, {
            method: 'POST',
            headers: s.headers,
            body,
            signal: aborts.signal,
          });
          const text = await r.text();
          label = r.status === 200 ? '200' : `${r.status} ${JSON.parse(text).__type}`;
          // A refused request is retried after a pause, as an SDK's backoff would.
          if (r.status !== 200) await sleep(100);
        } catch {
          label = 'abandoned';
        }
        statuses.set(label, (statuses.get(label) ?? 0) + 1);
      }
    });
    await sleep(200);
    const lat = await signLoop(seconds);
    running = false;
    // The generating client leaves: what it had in flight is abandoned.
    aborts.abort();
    await Promise.all(loops);
    const cpu = cpuSeconds(pid) - cpu0;
    if (inFlight === 8) signP99At8 = pct(lat, 99);
    console.log(
      `Sign RSA-2048 while ${inFlight} RSA-4096 GenerateDataKeyPair in flight: ${lat.length} signatures in ${seconds} s, p50 ${ms(pct(lat, 50))}, p99 ${ms(pct(lat, 99))}; generations ${JSON.stringify(Object.fromEntries(statuses))}; API CPU ${cpu.toFixed(2)} s`,
    );
    // Generations the client left go on in the old code: wait until signing is quick again,
    // at most 30 s, so the next round starts on a quiet server.
    const t0 = performance.now();
    for (;;) {
      const l = await signLoop(0.3);
      if (pct(l, 50) < 4 * pct(quiet, 50) + 5 || performance.now() - t0 > 30_000) break;
    }
    console.log(`  quiet again after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  signAgent.destroy();
  printResult({
    name: 'expensive-pwri-healthz',
    metric: `/healthz answers per second during ten PWRI conversions of ${iterations[0].toLocaleString('en')} iterations`,
    value: Number(pwriRate.toFixed(1)),
    baseline: '/healthz answers per second, quiet, same run',
    baselineValue: quietHealthz.answers,
    ratio: Number((pwriRate / quietHealthz.answers).toFixed(3)),
    unit: 'answers/s',
    notes: `closed loop on one connection; ${root === fileURLToPath(new URL('..', import.meta.url)) ? 'this checkout' : root}`,
  });
  printResult({
    name: 'expensive-keypair-sign-p99',
    metric: 'another tenant’s RSA-2048 Sign p99 while 8 RSA-4096 GenerateDataKeyPair are in flight',
    value: Number(signP99At8.toFixed(1)),
    baseline: 'the same Sign p99, quiet, same run',
    baselineValue: Number(pct(quiet, 99).toFixed(1)),
    ratio: Number((signP99At8 / pct(quiet, 99)).toFixed(3)),
    unit: 'ms',
    notes: `${seconds} s of signing; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
  });
  console.log(`load average ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
} finally {
  await k.stop();
  rmSync(dir, { recursive: true, force: true });
}
