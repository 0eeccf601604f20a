/**
 * One hostile SignedData against the API: one valid RSA-2048 signer repeated 64 times and 63
 * decoy CA certificates named like its issuer, each with a 3072-bit key and a 3071-bit public
 * exponent (support/fixtures/hostile-cms.ts). A workload holding only migration.convert sends it to
 * POST /api/v3/migration/stream/convert-pkcs7-to-jose, one request at a time, while GET /healthz
 * is probed back to back. Prints the API's CPU seconds, the /healthz answers and their p50, p99
 * and worst latency over the attack window, and the load average.
 *
 * Bounded: at most BENCH_REQUESTS requests (default 3) within a window of BENCH_SECONDS (default
 * 40), over which the figures are taken; then the curl still running is killed and the API
 * stopped (SIGTERM, SIGKILL after 10 s).
 * BENCH_METADATA (default {"verify":"signature"}) is the conversion metadata.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { cpuSeconds, importKey } from './lib/cms.ts';
import { adminToken, provision, startKeyward } from './lib/keyward.ts';
import { OpenSslDir } from '../support/fixtures/pkcs7.ts';
import { hostileSignedData, hostileSigner } from '../support/fixtures/hostile-cms.ts';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 40);
const METADATA = process.env.BENCH_METADATA ?? '{"verify":"signature"}';
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const work = mkdtempSync('/tmp/keyward-dos-bench-');
const ssl = new OpenSslDir();
const k = await startKeyward();
let curl: ChildProcess | null = null;
try {
  process.stdout.write(`load average before: ${load()}\n`);
  const signer = hostileSigner(ssl, 'dos-signer');
  const file = join(work, 'hostile.p7m');
  const hostile = hostileSignedData(ssl, signer, Buffer.from('archived mail\n'));
  writeFileSync(file, hostile);
  const p = await provision(k, ['migration.convert'], []);
  // The signer is the tenant's own key pair, so the conversion re-signs with it.
  await importKey(
    k.url,
    await adminToken(k),
    p.tenantId,
    Buffer.concat([ssl.read(signer.keyFile), ssl.read(signer.certFile)]),
    'dos-signer',
    'sign',
  );

  const pid = k.child.process.pid!;
  const deadline = performance.now() + SECONDS * 1000;
  const cpu0 = cpuSeconds(pid);
  let stop = false;
  const latencies: number[] = [];
  const probe = (async () => {
    while (!stop) {
      const t0 = performance.now();
      try {
        const r = await fetch(`${k.url}/healthz`, {
          signal: AbortSignal.timeout(Math.max(1, Math.ceil(deadline - t0))),
        });
        await r.arrayBuffer();
        if (r.ok) latencies.push(performance.now() - t0);
      } catch {
        // Aborted at the end of the window: not an answer.
      }
    }
  })();

  const statuses: string[] = [];
  for (let i = 0; i < REQUESTS && performance.now() < deadline; i++) {
    const target = `${k.url}/api/v3/migration/stream/convert-pkcs7-to-jose`;
    const t0 = performance.now();
    const status = await new Promise<string>((resolve) => {
      curl = spawn('curl', [
        '-sS',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        '--max-time',
        String(Math.max(1, Math.ceil((deadline - t0) / 1000))),
        '-X',
        'POST',
        target,
        '-H',
        `authorization: Bearer ${p.token}`,
        '-H',
        'Expect:',
        '--form-string',
        `metadata=${METADATA}`,
        '-F',
        `file=@${file};type=application/pkcs7-mime;filename=hostile.p7m`,
      ]);
      let out = '';
      curl.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      curl.on('close', () => resolve(out.trim() || 'none'));
    });
    curl = null;
    process.stderr.write(`request ${i + 1}: ${status}\n`);
    statuses.push(`${status} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  // The window is the same whatever the answers: /healthz is probed until its end.
  while (performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  stop = true;
  const cpu = cpuSeconds(pid) - cpu0;
  await probe;
  const sorted = [...latencies].sort((a, b) => a - b);
  const pct = (q: number) =>
    sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN;
  process.stdout.write(
    [
      `file: ${hostile.length} bytes, metadata ${METADATA}`,
      `requests: ${statuses.join(', ')}`,
      `window: ${SECONDS} s`,
      `API CPU during the window: ${cpu.toFixed(2)} s`,
      `/healthz answers: ${latencies.length}, p50 ${pct(0.5).toFixed(1)} ms, p99 ${pct(0.99).toFixed(1)} ms, worst ${(sorted.at(-1) ?? NaN).toFixed(1)} ms`,
      `load average after: ${load()}`,
    ].join('\n') + '\n',
  );
} finally {
  (curl as ChildProcess | null)?.kill('SIGKILL');
  await k.stop();
  ssl.cleanup();
  rmSync(work, { recursive: true, force: true });
}
