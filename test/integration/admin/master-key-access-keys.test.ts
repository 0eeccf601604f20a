/**
 * Workload access keys (the secrets SigV4 needs, sealed under the master keyring) are in the
 * keyring's bookkeeping like every other sealed value: the status counts them, the rewrap
 * re-seals them, and the start and restore checks need their master key id. An access key whose
 * secret this keyring cannot open answers what an unknown access key answers (a client error the
 * AWS SDK does not retry) and the log tells the operator why. Every column of the database that
 * holds a sealed blob is one of the listed sources.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { GenerateRandomCommand, KMSClient } from '@aws-sdk/client-kms';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE, createTestDatabase, type TestDatabase } from '../../../support/database.ts';
import { adminToken, api } from '../../../support/auth.ts';
import { awsTenant, type AwsTenant } from '../aws-kms/support.ts';
import { ConfigError } from '../../../shared/config/index.ts';
import { createKeyring, sealedBy } from '../../../shared/crypto/master-key.ts';
import {
  accessKeySealContext,
  checkKeyring,
  countSealedById,
  sealedIdSql,
} from '../../../shared/keys/sealed-items.ts';
import { sleep } from '../../support/time.ts';
import { createAccessKeyResolver } from '../../../api/services/auth/access-keys.ts';

const A = randomBytes(32).toString('base64');
const B = randomBytes(32).toString('base64');
const ring = (...entries: string[]) => ({ KEYWARD_MASTER_KEY: entries.join(',') });

/** One SigV4 call (GenerateRandom) with the SDK's default retries; what it answered. */
async function sigv4(app: TestApp, accessKeyId: string, secretAccessKey: string) {
  const kms = new KMSClient({
    endpoint: app.url,
    region: 'eu-west-1',
    credentials: { accessKeyId, secretAccessKey },
  });
  try {
    const r = await kms.send(new GenerateRandomCommand({ NumberOfBytes: 8 }));
    return { ok: r.Plaintext?.length === 8 };
  } catch (err) {
    const e = err as Error & { $metadata?: { httpStatusCode?: number; attempts?: number } };
    return {
      name: e.name,
      message: e.message,
      status: e.$metadata?.httpStatusCode,
      attempts: e.$metadata?.attempts,
    };
  } finally {
    kms.destroy();
  }
}

/** How many values in any bytea column of the database are v2 blobs naming one of `ids`. */
async function blobsInEveryColumn(db: Knex, ids: string[]): Promise<number> {
  const columns = (
    await db.raw(
      `select table_name, column_name from information_schema.columns
        where table_schema = current_schema() and data_type = 'bytea'`,
    )
  ).rows as Array<{ table_name: string; column_name: string }>;
  let n = 0;
  for (const { table_name, column_name } of columns) {
    const col = `"${column_name}"`;
    const [{ count }] = (
      await db.raw(
        `select count(*)::int as count from "${table_name}" where ${col} is not null and length(${col}) > 2 and ${sealedIdSql(col)} in (${ids.map(() => '?').join(', ')})`,
        ids,
      )
    ).rows as Array<{ count: number }>;
    n += count;
  }
  return n;
}

async function waitForRewrap(app: TestApp, token: string) {
  for (;;) {
    const s = await api(app, 'GET', '/api/v3/admin/platform/master-key', token);
    if ((s.body.rewrap as { state: string }).state !== 'running') return s.body;
    await sleep(50);
  }
}

describe(`access keys in the master keyring's bookkeeping (${TEST_ENGINE})`, () => {
  let db: TestDatabase;
  let dataDir: string;
  let t: AwsTenant;
  const shared = () => (db.url ? { databaseUrl: db.url, dataDir } : { dataDir });
  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'keyward-mk-ak-'));
  });
  afterAll(async () => {
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('when an access key made under k1 is rotated as the README says (k2 in front, rewrap, status says k1 seals 0, k1 removed), then SigV4 calls still work', async () => {
    const app1 = await startTestApp(ring(`k1:${A}`), shared());
    t = await awsTenant(app1);
    expect(await sigv4(app1, t.accessKeyId, t.secretAccessKey)).toEqual({ ok: true });
    await app1.stop();

    const app2 = await startTestApp(ring(`k2:${B}`, `k1:${A}`), shared());
    try {
      const platform = await adminToken(app2);
      const before = await api(app2, 'GET', '/api/v3/admin/platform/master-key', platform);
      const k1 = (before.body.keyring as Array<{ id: string; items: number }>)[1];
      // Every sealed blob in the database is counted: the access key's secret among them.
      expect(k1).toEqual({
        id: 'k1',
        newest: false,
        items: await blobsInEveryColumn(app2.ctx.db, ['k1']),
      });
      await api(app2, 'POST', '/api/v3/admin/platform/master-key/rewrap', platform);
      const after = await waitForRewrap(app2, platform);
      expect(after.rewrap).toMatchObject({ state: 'done', rewrapped: k1.items, unopenable: 0 });
      expect(after.keyring).toEqual([
        { id: 'k2', newest: true, items: k1.items },
        { id: 'k1', newest: false, items: 0 },
      ]);
      const row = await app2.ctx.db('access_keys').where({ id: t.accessKeyId }).first();
      expect(sealedBy(row.secret)).toBe('k2');
      expect(await blobsInEveryColumn(app2.ctx.db, ['k1'])).toBe(0);
    } finally {
      await app2.stop();
    }

    const app3 = await startTestApp(ring(`k2:${B}`), shared());
    try {
      expect(await sigv4(app3, t.accessKeyId, t.secretAccessKey)).toEqual({ ok: true });
    } finally {
      await app3.stop();
    }
  }, 180_000);

  it('when only an access key is still sealed under k1, then the status counts it, and the start and the restore check without k1 refuse, naming k1', async () => {
    // The access key's secret put back under k1, as a rewrap that skipped it left it.
    const app = await startTestApp(ring(`k2:${B}`, `k1:${A}`), shared());
    try {
      const k1Only = createKeyring([{ id: 'k1', key: Buffer.from(A, 'base64') }]);
      await app.ctx
        .db('access_keys')
        .where({ id: t.accessKeyId })
        .update({
          secret: k1Only.seal(
            Buffer.from(t.secretAccessKey),
            accessKeySealContext(t.tenantId, t.accessKeyId),
          ),
        });
      expect((await countSealedById(app.ctx.db)).get('k1')).toBe(1);
      const status = await api(
        app,
        'GET',
        '/api/v3/admin/platform/master-key',
        await adminToken(app),
      );
      expect([status.body.keyring, status.body.complete]).toEqual([
        [
          { id: 'k2', newest: true, items: expect.any(Number) },
          { id: 'k1', newest: false, items: 1 },
        ],
        false,
      ]);
      // The restore's check of a restored database is this one.
      const restoreCheck = await checkKeyring(
        app.ctx.db,
        createKeyring([{ id: 'k2', key: Buffer.from(B, 'base64') }]),
      ).then(
        () => null,
        (err: Error) => err,
      );
      expect(restoreCheck).toBeInstanceOf(ConfigError);
      expect(restoreCheck!.message).toContain(
        'ids still in use but not in the keyring: k1 (1 items)',
      );
    } finally {
      await app.stop();
    }
    const start = await startTestApp(ring(`k2:${B}`), shared()).then(
      () => null,
      (err: Error) => err,
    );
    expect(start).toBeInstanceOf(ConfigError);
    expect(start!.message).toContain('ids still in use but not in the keyring: k1 (1 items)');
  }, 120_000);

  it('when a running service meets an access key it cannot open, then the caller gets what an unknown access key gets, once (not retried), and the log names the access key and the missing master key id', async () => {
    const app = await startTestApp(ring(`k2:${B}`, `k1:${A}`), shared());
    try {
      const k1Only = createKeyring([{ id: 'k1', key: Buffer.from(A, 'base64') }]);
      await app.ctx
        .db('access_keys')
        .where({ id: t.accessKeyId })
        .update({
          secret: k1Only.seal(
            Buffer.from(t.secretAccessKey),
            accessKeySealContext(t.tenantId, t.accessKeyId),
          ),
        });
      // The keyring of this instance loses k1 while the row still needs it (a keyring mistake
      // on one instance; the start check ran on the other's).
      const k2Only = createKeyring([{ id: 'k2', key: Buffer.from(B, 'base64') }]);
      (app.ctx as { masterKey: unknown }).masterKey = k2Only;
      // The resolver reads with the keyring it was built with: build it as such an instance would.
      (app.ctx as { accessKeys: unknown }).accessKeys = createAccessKeyResolver(app.ctx);
      const unopenable = await sigv4(app, t.accessKeyId, t.secretAccessKey);
      const unknown = await sigv4(app, 'KWAKAAAAAAAAAAAAAAAA', t.secretAccessKey);
      expect(unknown).toMatchObject({
        name: 'UnrecognizedClientException',
        status: 400,
        attempts: 1,
      });
      expect(unopenable).toEqual(unknown);
      const log = app.logText();
      expect(log).toContain(
        `access key ${t.accessKeyId} is refused as invalid because its secret is sealed under master key id k1, which this service's keyring (k2) does not hold`,
      );
      expect(log).not.toContain('KMSInternalException');
    } finally {
      await app.stop();
    }
  }, 120_000);
});
