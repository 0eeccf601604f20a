/**
 * A durable migration lives through crashes: two worker processes convert a few thousand small
 * messages while the test kills a worker with SIGKILL at moments paced by progress (and starts a
 * new one), restarts the migration's own Redis once with its data wiped (what a Redis without its
 * AOF loses: every queued chunk and the listing step), and restarts PostgreSQL once as the
 * workers see it (a proxy in front of the machine's server cuts every connection and refuses new
 * ones for a few seconds: the machine's server itself is never stopped). While a replacement
 * worker starts the migration is paused, so every kill lands before the end however loaded the
 * machine. The ledger is the truth, so the workers'
 * sweep puts back what Redis lost and leases let the objects of a dead worker go to another.
 * At the end: completed, one converted ledger row per object (0 lost), every row's outputs in
 * the store with the recorded size and SHA-256 (read back and hashed here), no output object
 * that the ledger does not name, and output writes counted at the object store (s3rver's
 * notifications): an object is written again only when a worker died between writing it and
 * recording it, which is bounded by what the killed workers had in hand. The manifest the
 * completing worker stored verifies with jose, and its tree root is recomputed here from the
 * report's rows with SHA-256 alone (RFC 6962), so it states exactly what the ledger holds.
 * CHAOS_OBJECTS sets the count (default 600, what a loaded 2-core machine converts inside the
 * deadline; the deadlines grow by 20 ms for each object beyond); the kills are bounded.
 */
import { createHash, createPublicKey } from 'node:crypto';
import { compactVerify, exportJWK, importJWK } from 'jose';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { OpenSslDir, makeKey, type TestKey } from '../../../support/fixtures/pkcs7.ts';
import { api } from '../../../support/auth.ts';
import { TreeHead, reportLineLeaf } from '../../../support/independent-manifest.ts';
import { startRedisServer, type TestRedisServer } from '../../support/redis-server.ts';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.ts';
import { expectEventually, sleep } from '../../support/time.ts';
import { tenantPrefix, tenantStore, type ObjectStore } from '../../../shared/storage/index.ts';
import {
  setArchiveSigningKey,
  spawnWorker,
  startJobsEnv,
  tenantWithKeys,
  type JobsEnv,
  type WorkerChild,
} from '../jobs/harness.ts';

const OBJECTS = Number(process.env.CHAOS_OBJECTS ?? 600);
/** Time allowed per object past the default count: 20 ms (50 objects/s on a loaded machine). */
const SCALE_MS = Math.max(0, OBJECTS - 600) * 20;
const KILLS = 5;
/** The kill after which Redis restarts empty, and the one after which PostgreSQL restarts. */
const REDIS_AT = 2;
const POSTGRES_AT = 4;
const CHUNK = 20;
/** The migration's own rate limit: the default count takes RUN_SECONDS at the least. */
const RUN_SECONDS = 20;
const RATE = Math.max(1, Math.ceil(OBJECTS / RUN_SECONDS));
const CONCURRENCY = 2;
const M = '/api/v3/migration/migrations';

let redis: TestRedisServer;
let env: JobsEnv;
let ssl: OpenSslDir;
let key: TestKey;
let signer: TestKey;
let archive: TestKey;
let pg: TcpProxy;
let tenant: { tenantId: string; token: string };
let store: ObjectStore;
const workers: WorkerChild[] = [];
const writes = new Map<string, number>();
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const workerEnv = () =>
  env.workerEnv({
    DATABASE_URL: proxied(env.db.url!),
    WORKER_CONCURRENCY: String(CONCURRENCY),
    MIGRATION_CHUNK_OBJECTS: String(CHUNK),
    MIGRATION_LEASE_MS: '3000',
    MIGRATION_SWEEP_INTERVAL_MS: '1000',
  });

/** The database URL through the proxy: what the workers see as PostgreSQL. */
function proxied(url: string): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(pg.port);
  return u.toString();
}

beforeAll(async () => {
  redis = await startRedisServer();
  ssl = new OpenSslDir();
  key = makeKey(ssl, 'chaos-rsa', 'rsa-2048');
  signer = makeKey(ssl, 'chaos-signer', 'ec-p256');
  archive = makeKey(ssl, 'chaos-archive', 'ec-p256');
  env = await startJobsEnv({ redisUrl: redis.url });
  const target = new URL(env.db.url!);
  pg = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  tenant = await tenantWithKeys(env.app, ssl, [key, signer]);
  // The archive signing key signs the manifest the completing worker stores.
  await setArchiveSigningKey(env.app, ssl, tenant.tenantId, archive);
  store = tenantStore(await env.app.ctx.objectStore.get(), tenant.tenantId);
  // About 2 KB each: a few distinct small messages, encrypted and signed, under many names.
  const messages: Buffer[] = [];
  for (let i = 0; i < 3; i++) {
    ssl.write(`m${i}.txt`, Buffer.alloc(1500, 65 + i));
    messages.push(
      ssl.run([
        'cms',
        '-encrypt',
        '-binary',
        '-aes-256-cbc',
        '-in',
        `m${i}.txt`,
        '-recip',
        key.certFile,
        '-outform',
        'DER',
      ]),
      ssl.run([
        'cms',
        '-sign',
        '-nodetach',
        '-binary',
        '-in',
        `m${i}.txt`,
        '-signer',
        signer.certFile,
        '-inkey',
        signer.keyFile,
        '-outform',
        'DER',
      ]),
    );
  }
  const names = Array.from({ length: OBJECTS }, (_, i) => `in/${String(i).padStart(6, '0')}.p7m`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < names.length) {
        const i = next++;
        await store.put(
          names[i],
          (async function* () {
            yield messages[i % messages.length];
          })(),
        );
      }
    }),
  );
  const out = `${tenantPrefix(tenant.tenantId)}out/`;
  env.s3.onObjectCreated((k) => {
    if (k.startsWith(out)) writes.set(k, (writes.get(k) ?? 0) + 1);
  });
  workers.push(await spawnWorker(workerEnv()), await spawnWorker(workerEnv()));
}, 240_000 + SCALE_MS);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await pg?.close();
  await env?.close();
  await redis?.close();
  ssl?.cleanup();
});

async function view(id: string): Promise<Record<string, any>> {
  for (let i = 0; i < 50; i++) {
    try {
      const r = await api(env.app, 'GET', `${M}/${id}`, tenant.token);
      if (r.status === 200) return r.body as Record<string, any>;
    } catch {
      // the API may be briefly unable to answer
    }
    await sleep(200);
  }
  throw new Error('the migration could not be read');
}

/** Pauses or resumes the migration, retrying while the API is briefly unable to answer. */
async function move(id: string, op: 'pause' | 'resume'): Promise<void> {
  for (let i = 0; i < 50; i++) {
    try {
      const r = await api(env.app, 'POST', `${M}/${id}/${op}`, tenant.token);
      if (r.status < 300 || r.status === 409) return;
    } catch {
      // the API may be briefly unable to answer
    }
    await sleep(200);
  }
  throw new Error(`the migration could not be ${op}d`);
}

/** Stops Redis, deletes its data (the append-only files) and starts it empty. */
async function restartRedisEmpty(): Promise<void> {
  await redis.stop();
  await rm(path.join(redis.directory, 'appendonlydir'), { recursive: true, force: true });
  await rm(path.join(redis.directory, 'appendonly.aof'), { force: true });
  await rm(path.join(redis.directory, 'dump.rdb'), { force: true });
  await redis.start();
}

describe('a durable migration through crashes', () => {
  it(
    `when workers are SIGKILLed ${KILLS} times, Redis loses everything once and PostgreSQL restarts once, then ${OBJECTS} objects end converted exactly as the ledger says`,
    async () => {
      const created = await api(env.app, 'POST', M, tenant.token, {
        source: { prefix: 'in/' },
        output: { prefix: 'out/' },
        // At most RATE objects/s, so half of the objects take RUN_SECONDS / 2 however fast the
        // machine: the kills, paced by progress, land before the end even on an idle one.
        rateLimit: RATE,
      });
      expect(created.status).toBe(202);
      const id = created.body.id as string;
      const deadline = Date.now() + 170_000 + SCALE_MS;
      let kills = 0;
      let redisRestarted = false;
      let postgresRestarted = false;
      let last = await view(id);
      // Kills are paced by progress, not by the clock: kill k comes once k/(2 KILLS) of the
      // objects are converted, so all of them land before the end however fast the machine is.
      while (last.state !== 'completed' && Date.now() < deadline) {
        await sleep(300 + Math.floor(Math.random() * 500));
        last = await view(id);
        if (last.state === 'completed') break;
        const converted = Number(last.counts?.converted ?? 0);
        if (kills < KILLS && converted >= (OBJECTS * (kills + 1)) / (2 * KILLS)) {
          const victim = Math.floor(Math.random() * workers.length);
          workers[victim].process.kill('SIGKILL');
          await workers[victim].exited;
          kills++;
          if (kills === REDIS_AT && !redisRestarted) {
            await restartRedisEmpty();
            redisRestarted = true;
          }
          if (kills === POSTGRES_AT && !postgresRestarted) {
            // Every connection cut and new ones refused, as while a server restarts.
            pg.refuse();
            await sleep(3000);
            pg.accept();
            postgresRestarted = true;
          }
          // Starting a worker takes seconds on a loaded machine while the other converts at
          // full rate: the migration is paused meanwhile (a durable state, as an operator would),
          // so the later kills still find objects left to convert.
          await move(id, 'pause');
          workers[victim] = await spawnWorker(workerEnv());
          await move(id, 'resume');
        }
      }
      last = await view(id);
      expect(kills).toBe(KILLS);
      expect(redisRestarted).toBe(true);
      expect(postgresRestarted).toBe(true);
      expect(last).toMatchObject({
        state: 'completed',
        counts: { listed: OBJECTS, converted: OBJECTS, refused: 0, pending: 0 },
      });

      // Every row against the store, read back and hashed here.
      const res = await fetch(`${env.app.url}${M}/${id}/report`, {
        headers: { authorization: `Bearer ${tenant.token}` },
      });
      const rows = (await res.text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(rows).toHaveLength(OBJECTS);
      expect(new Set(rows.map((r) => r.sourceKey)).size).toBe(OBJECTS);
      const named = new Set<string>();
      let disagree = 0;
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < rows.length) {
            const row = rows[next++];
            expect(row.outcome).toBe('converted');
            for (const o of row.outputs) {
              named.add(o.key);
              const parts: Buffer[] = [];
              for await (const c of await store.get(o.key)) parts.push(c as Buffer);
              const bytes = Buffer.concat(parts);
              if (bytes.length !== o.size || sha256(bytes) !== o.sha256) disagree++;
            }
          }
        }),
      );
      expect(disagree).toBe(0);
      const stored: string[] = [];
      for await (const o of store.list('out/')) stored.push(o.key);
      expect(stored.sort()).toEqual([...named].sort());

      // Output writes at the store: a rewrite only for objects a killed worker had in hand.
      const prefix = tenantPrefix(tenant.tenantId);
      const rewritten = [...writes].filter(([, n]) => n > 1).map(([k]) => k.slice(prefix.length));
      const inHand = KILLS * CONCURRENCY * CHUNK * 2;
      console.log(
        `chaos: ${OBJECTS} objects, ${kills} SIGKILLs, Redis wiped once, PostgreSQL restarted once; output writes ${[...writes.values()].reduce((a, b) => a + b, 0)} for ${named.size} outputs; ${rewritten.length} outputs written more than once (bound ${inHand}); recorded attempts > 1: ${rows.filter((r) => r.attempts > 1).length}`,
      );
      expect(rewritten.length).toBeLessThanOrEqual(inHand);
      // Nothing the ledger recorded as converted was converted again: every rewrite happened
      // before the row's one recorded conversion (the digests above are of the last write).
      expect(rows.every((r) => r.attempts === 1)).toBe(true);

      // The manifest the completing worker stored: jose verifies its signature with the archive
      // key's public JWK, and its root is the RFC 6962 root of the report's rows, computed here.
      const manifest = await expectEventually(
        async () => {
          const r = await api(env.app, 'GET', `${M}/${id}/manifest`, tenant.token);
          expect(r.status).toBe(200);
          return r.body as { jws: string; root: string; size: number };
        },
        { timeoutMs: 20_000 + SCALE_MS / 10, intervalMs: 200 },
      );
      const { payload } = await compactVerify(
        manifest.jws,
        await importJWK(await exportJWK(createPublicKey(archive.privateKey)), 'ES256'),
      );
      const claims = JSON.parse(Buffer.from(payload).toString());
      expect(claims.tree).toEqual({ alg: 'rfc6962-sha256', size: OBJECTS, root: manifest.root });
      expect(claims.counts).toMatchObject({ total: OBJECTS, converted: OBJECTS, refused: 0 });
      const head = new TreeHead();
      for (const r of rows) head.push(reportLineLeaf(r));
      expect(head.root()).toBe(manifest.root);
    },
    300_000 + 2 * SCALE_MS,
  );
});
