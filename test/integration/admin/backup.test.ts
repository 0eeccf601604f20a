/**
 * Backup and restore: a backup taken through the API while the service runs, restored
 * into an empty database of the other engine, gives a service where old ciphertexts decrypt,
 * signatures verify, audit chains verify, workloads log in with their secrets and tokens issued
 * before the backup still verify. Each bad backup or target is refused with nothing written.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import {
  SHARED_POSTGRES_URL,
  createPostgresDatabase,
  type TestDatabase,
} from '../../../support/database.ts';
import {
  adminToken,
  api,
  makeTenant,
  userToken,
  workloadToken,
  type TestTenant,
} from '../../../support/auth.ts';
import { KeywardClient } from '../../../bin/lib/client.ts';
import { downloadBackup, fileSource } from '../../../bin/lib/backup.ts';
import { RestoreRefused, restoreBackup } from '../../../shared/backup/restore.ts';
import {
  BackupFileError,
  decryptBackup,
  encryptBackup,
} from '../../../shared/backup/sealed-file.ts';
import { verifyChain } from '../../../shared/audit/verify.ts';
import { parseKeyring } from '../../../shared/crypto/keyring.ts';

const KEYRING = `k1:${randomBytes(32).toString('base64')}`;
const ENV = { KEYWARD_MASTER_KEY: KEYRING };
const PASSPHRASE = 'a backup passphrase of some length';
const data = Buffer.from('attack at dawn').toString('base64');
const context = { purpose: 'invoices' };

interface Fixture {
  t: TestTenant;
  core: string;
  ciphertext: string;
  signature: string;
}

/** Keys, a context-bound ciphertext, a signature, a workload token and audit events. */
async function populate(app: TestApp): Promise<Fixture> {
  const t = await makeTenant(app, [
    'crypto.encrypt',
    'crypto.decrypt',
    'crypto.sign',
    'crypto.verify',
    'admin.keys.create',
  ]);
  const admin = await userToken(app, t);
  for (const [kid, type] of [
    ['aes', 'aes-256'],
    ['ec', 'ec-p256'],
  ]) {
    const r = await api(app, 'POST', `/api/v3/admin/tenants/${t.tenantId}/keys`, admin, {
      kid,
      type,
    });
    expect(r.status).toBe(201);
  }
  const core = await workloadToken(app, t);
  const enc = await api(app, 'POST', '/api/v3/crypto/encrypt', core, { kid: 'aes', data, context });
  const sig = await api(app, 'POST', '/api/v3/crypto/sign', core, { kid: 'ec', data });
  expect([enc.status, sig.status]).toEqual([200, 200]);
  await app.ctx.audit.flush();
  return {
    t,
    core,
    ciphertext: enc.body.ciphertext as string,
    signature: sig.body.signature as string,
  };
}

/** Everything made before the backup still works on `app`. */
async function expectIntact(app: TestApp, fx: Fixture) {
  const dec = await api(app, 'POST', '/api/v3/crypto/decrypt', fx.core, {
    ciphertext: fx.ciphertext,
    context,
  });
  expect(dec.status).toBe(200);
  const ver = await api(app, 'POST', '/api/v3/crypto/verify', fx.core, {
    kid: 'ec',
    data,
    signature: fx.signature,
  });
  expect(ver.body.valid).toBe(true);
  expect(await workloadToken(app, fx.t)).toEqual(expect.any(String));
  const chain = await verifyChain(app.ctx.db, fx.t.tenantId, 1);
  expect(chain).toMatchObject({ valid: true });
  expect(chain.valid && chain.checked).toBeGreaterThan(2);
}

async function backupOf(app: TestApp, file: string) {
  const token = await adminToken(app);
  const client = new KeywardClient({ url: app.url, tokens: { token: async () => token } });
  return downloadBackup(client, file, PASSPHRASE);
}

/** The number of tables in the public schema of a Postgres database (0: nothing written). */
async function tableCount(url: string): Promise<number> {
  const k = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  try {
    const r = await k.raw(
      "select count(*)::int as n from information_schema.tables where table_schema = 'public'",
    );
    return r.rows[0].n as number;
  } finally {
    await k.destroy();
  }
}

describe('backup and restore across engines', () => {
  const dir = mkdtempSync(join(tmpdir(), 'keyward-backup-'));
  const dbs: TestDatabase[] = [];
  const newPostgres = async () => {
    const db = await createPostgresDatabase(SHARED_POSTGRES_URL);
    dbs.push(db);
    return db.url!;
  };
  let good = '';
  let restoredUrl = '';
  afterAll(async () => {
    for (const db of dbs) await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('when the embedded database is backed up and restored into PostgreSQL, then keys, signatures, audit chains, workload logins and old tokens all work there', async () => {
    const source = await startTestApp(ENV, { dataDir: join(dir, 'embedded-src') });
    const fx = await populate(source);
    good = join(dir, 'embedded.kwbackup');
    const summary = await backupOf(source, good);
    expect(summary.bytes).toBeGreaterThan(summary.plaintextBytes);
    expect(readFileSync(good).includes(Buffer.from('signing_keys'))).toBe(false); // encrypted
    await source.stop();

    restoredUrl = await newPostgres();
    const report = await restoreBackup({
      open: fileSource(good),
      passphrase: PASSPHRASE,
      target: { databaseUrl: restoredUrl },
      keyring: parseKeyring(KEYRING, 'KEYWARD_MASTER_KEY'),
    });
    expect(report.tables.find((t) => t.name === 'key_versions')!.rows).toBeGreaterThanOrEqual(2);
    const restored = await startTestApp(ENV, {
      databaseUrl: restoredUrl,
      dataDir: join(dir, 'pg-run'),
    });
    try {
      await expectIntact(restored, fx);
    } finally {
      await restored.stop();
    }
  }, 180_000);

  it('when PostgreSQL is backed up and restored into an embedded DATA_DIR, then everything works there too', async () => {
    const url = await newPostgres();
    const source = await startTestApp(ENV, { databaseUrl: url, dataDir: join(dir, 'pg-src') });
    const fx = await populate(source);
    const file = join(dir, 'postgres.kwbackup');
    await backupOf(source, file);
    // Audited once the whole snapshot is written, in the caller's tenant, with its row count.
    await source.ctx.audit.flush();
    const audited = await source.ctx
      .db('audit_events')
      .where({ action: 'platform.backup' })
      .select('tenant_id', 'target', 'details');
    expect(audited).toEqual([
      { tenant_id: source.platformTenantId, target: null, details: expect.anything() },
    ]);
    const details = audited[0].details as string | { rows: number };
    expect((typeof details === 'string' ? JSON.parse(details) : details).rows).toBeGreaterThan(0);
    await source.stop();

    const target = join(dir, 'embedded-dst');
    await restoreBackup({
      open: fileSource(file),
      passphrase: PASSPHRASE,
      target: { dataDir: target },
    });
    // Started without its keyring, it stops naming the ids, and leaves no generated key behind.
    const keyless = await startTestApp(
      { KEYWARD_MASTER_KEY: undefined as unknown as string },
      { dataDir: target },
    ).catch((e: Error) => e);
    expect((keyless as Error).message).toContain('ids still in use but not in the keyring: k1');
    expect(existsSync(join(target, 'master.key'))).toBe(false);
    const restored = await startTestApp(ENV, { dataDir: target });
    try {
      await expectIntact(restored, fx);
    } finally {
      await restored.stop();
    }
  }, 180_000);

  describe('bad backups and targets are refused with nothing written', () => {
    const variant = (name: string, bytes: Buffer) => {
      const path = join(dir, name);
      writeFileSync(path, bytes);
      return path;
    };
    /** The good backup's plaintext with its header changed, encrypted again. */
    async function withHeader(change: (h: Record<string, unknown>) => void): Promise<string> {
      let text = '';
      for await (const c of decryptBackup(fileSource(good)(), PASSPHRASE)) text += c.toString();
      const lines = text.split('\n');
      const header = JSON.parse(lines[0]);
      change(header);
      lines[0] = JSON.stringify(header);
      const out: Buffer[] = [];
      for await (const c of encryptBackup([Buffer.from(lines.join('\n'))], PASSPHRASE)) out.push(c);
      return variant('changed.kwbackup', Buffer.concat(out));
    }

    it.each([
      [
        'truncated',
        () => readFileSync(good).subarray(0, readFileSync(good).length - 100),
        /truncated/,
      ],
      [
        'with one byte flipped',
        () => {
          const b = Buffer.from(readFileSync(good));
          b[Math.floor(b.length / 2)] ^= 0x01;
          return b;
        },
        /integrity check/,
      ],
      [
        'with bytes after its end',
        () => Buffer.concat([readFileSync(good), Buffer.of(0)]),
        /after its last chunk/,
      ],
    ])(
      'when the file is %s, then the restore refuses it and the target stays empty',
      async (name, bytes, message) => {
        const url = await newPostgres();
        const file = variant(`${name.replace(/\W+/g, '-')}.kwbackup`, bytes());
        await expect(
          restoreBackup({
            open: fileSource(file),
            passphrase: PASSPHRASE,
            target: { databaseUrl: url },
          }),
        ).rejects.toThrow(message);
        expect(await tableCount(url)).toBe(0);
      },
      60_000,
    );

    it('when the passphrase is wrong, then it says so and the target stays empty', async () => {
      const url = await newPostgres();
      const err = await restoreBackup({
        open: fileSource(good),
        passphrase: 'not the passphrase at all',
        target: { databaseUrl: url },
      }).catch((e: Error) => e);
      expect(err).toBeInstanceOf(BackupFileError);
      expect((err as Error).message).toContain('passphrase is wrong');
      expect(await tableCount(url)).toBe(0);
    }, 60_000);

    it('when the backup is of a newer schema, then it is refused naming the migration and the target stays empty', async () => {
      const file = await withHeader((h) => {
        h.migrations = [...(h.migrations as string[]), '999_from_the_future'];
      });
      const url = await newPostgres();
      const err = await restoreBackup({
        open: fileSource(file),
        passphrase: PASSPHRASE,
        target: { databaseUrl: url },
      }).catch((e: Error) => e);
      expect(err).toBeInstanceOf(RestoreRefused);
      expect((err as Error).message).toContain('999_from_the_future');
      expect(await tableCount(url)).toBe(0);
    }, 60_000);

    it('when the target already holds data, then the restore is refused and the data is as it was', async () => {
      const k = knexFactory({ client: 'pg', connection: restoredUrl, pool: { min: 0, max: 1 } });
      const before = (await k('audit_events').count({ n: '*' }))[0].n;
      const err = await restoreBackup({
        open: fileSource(good),
        passphrase: PASSPHRASE,
        target: { databaseUrl: restoredUrl },
      }).catch((e: Error) => e);
      expect(err).toBeInstanceOf(RestoreRefused);
      expect((err as Error).message).toContain('not empty');
      expect((await k('audit_events').count({ n: '*' }))[0].n).toBe(before);
      await k.destroy();
    }, 60_000);
  });
});
