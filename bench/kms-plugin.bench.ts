/**
 * The Kubernetes KMS v2 plugin's Encrypt round trip: a 32-byte DEK seed sent over the unix socket
 * to `keyward kms-plugin` (gRPC, a process of its own), which seals it through
 * POST /api/v3/crypto/encrypt, against that native encrypt call of the same 32 bytes sent
 * straight to the service with a bearer token, same service, same run. One call at a time, as
 * the API server makes them, in blocks alternated ABBA twice; p50 and p99 of each (reported
 * only: the plugin adds a gRPC hop and a process to the native call). BENCH_CALLS calls per block
 * (default 500). docs/kubernetes-kms.md.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { printResult } from './lib/result.ts';
import { provision, startKeyward } from './lib/keyward.ts';
import { cleanEnv } from './lib/process.ts';

const calls = Number(process.env.BENCH_CALLS ?? 500);
const root = new URL('..', import.meta.url).pathname;
const KID = 'k8s-secrets';
const CONTEXT = { purpose: 'kubernetes-kms-v2' };

const quantile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

const k = await startKeyward();
const dir = mkdtempSync(join(tmpdir(), 'keyward-kms-bench-'));
const socket = join(dir, 'kms.sock');
let plugin: ReturnType<typeof spawn> | undefined;
try {
  const t = await provision(
    k,
    ['crypto.encrypt', 'crypto.decrypt'],
    [{ kid: KID, type: 'aes-256' }],
  );
  plugin = spawn(
    process.execPath,
    [join(root, 'bin/keyward.js'), 'kms-plugin', '--socket', socket, '--key', KID],
    {
      env: cleanEnv({
        KEYWARD_URL: k.url,
        KEYWARD_CLIENT_ID: t.clientId,
        KEYWARD_CLIENT_SECRET: t.clientSecret,
      }),
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  for (let i = 0; i < 600 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 50));
  if (!existsSync(socket)) throw new Error('the plugin did not make its socket within 30 s');

  const definition = loadSync(join(root, 'bin/lib/kms-plugin/api.proto'), {
    keepCase: true,
    defaults: true,
  });
  const v2 = grpc.loadPackageDefinition(definition).v2 as unknown as {
    KeyManagementService: new (
      address: string,
      creds: grpc.ChannelCredentials,
    ) => grpc.Client & {
      Encrypt: (
        req: unknown,
        opts: grpc.CallOptions,
        cb: (err: grpc.ServiceError | null, res: { key_id: string }) => void,
      ) => void;
    };
  };
  const client = new v2.KeyManagementService(`unix://${socket}`, grpc.credentials.createInsecure());
  const seed = randomBytes(32);

  const viaPlugin = () =>
    new Promise<void>((resolve, reject) =>
      client.Encrypt({ plaintext: seed, uid: 'bench' }, { deadline: Date.now() + 10_000 }, (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  const body = JSON.stringify({ kid: KID, data: seed.toString('base64'), context: CONTEXT });
  const native = async () => {
    const res = await fetch(`${k.url}/api/v3/crypto/encrypt`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${t.token}` },
      body,
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`native encrypt answered ${res.status}`);
  };

  const timings = { plugin: [] as number[], native: [] as number[] };
  const block = async (which: 'plugin' | 'native', n: number, keep = true) => {
    const call = which === 'plugin' ? viaPlugin : native;
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      await call();
      if (keep) timings[which].push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  };
  // Warm-up: the plugin's token and the service's key cache, JIT on both sides.
  await block('plugin', Math.min(50, calls), false);
  await block('native', Math.min(50, calls), false);
  for (const which of [
    'plugin',
    'native',
    'native',
    'plugin',
    'plugin',
    'native',
    'native',
    'plugin',
  ] as const)
    await block(which, calls);
  client.close();

  const p = (which: 'plugin' | 'native', q: number) => quantile(timings[which], q);
  console.log(
    `kms-plugin Encrypt over the socket: p50 ${p('plugin', 0.5).toFixed(2)} ms, p99 ${p('plugin', 0.99).toFixed(2)} ms (${timings.plugin.length} calls)`,
  );
  console.log(
    `native POST /api/v3/crypto/encrypt: p50 ${p('native', 0.5).toFixed(2)} ms, p99 ${p('native', 0.99).toFixed(2)} ms (${timings.native.length} calls)`,
  );
  printResult({
    name: 'kms-plugin-encrypt',
    metric: 'KMS v2 plugin Encrypt of a 32-byte seed over the unix socket, p50',
    value: Number(p('plugin', 0.5).toFixed(3)),
    baseline: 'POST /api/v3/crypto/encrypt of the same 32 bytes (bearer), same run, p50',
    baselineValue: Number(p('native', 0.5).toFixed(3)),
    ratio: Number((p('plugin', 0.5) / p('native', 0.5)).toFixed(3)),
    unit: 'ms',
    notes: `one call at a time, ABBA twice, ${calls} calls a block; p99 plugin ${p('plugin', 0.99).toFixed(2)} ms, native ${p('native', 0.99).toFixed(2)} ms`,
  });
} finally {
  if (plugin && plugin.exitCode === null) {
    const exited = new Promise((resolve) => plugin!.once('exit', resolve));
    plugin.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
  await k.stop();
}
