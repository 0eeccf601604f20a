/**
 * Access-key revocation across API instances ("revokes one across every instance within
 * the limits the change feed already keeps"). Two instances share one Postgres database, with
 * Redis (the fast path) and without it (the change feed's poll alone). Instance B verifies a
 * signed request, so it caches the access key; then instance A deletes the key, disables the
 * workload, or suspends the tenant, and B must refuse the key. B's change feed is watched for
 * the workload's `client` change, and the first request after B applied it must be refused: the
 * refusal comes from the feed, not from the cache entry's 5-second expiry, and no fixed sleep
 * stands in for the assertion. Aliases likewise: B keeps what an alias names (and that it names
 * nothing) until the feed carries A's CreateAlias or DeleteAlias.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { api } from '../../../support/auth.ts';
import {
  createPostgresDatabase,
  SHARED_POSTGRES_URL,
  TEST_REDIS_URL,
  type TestDatabase,
} from '../../../support/database.ts';
import { signedRequest } from '../../../support/sigv4.ts';
import { awsTenant, type AwsTenant } from './support.ts';

/** Longer than the feed's poll (1 s) with room for a loaded machine; only a failure waits it out. */
const FEED_BOUND_MS = 10_000;

for (const redis of [true, false]) {
  describe(`AWS access keys revoked across two instances on one Postgres (${redis ? 'Redis fan-out' : 'no Redis: the poll alone'})`, () => {
    let db: TestDatabase;
    let a: TestApp;
    let b: TestApp;
    let t: AwsTenant;
    const env: Record<string, string> = redis ? { REDIS_URL: TEST_REDIS_URL } : {};

    beforeAll(async () => {
      db = await createPostgresDatabase(SHARED_POSTGRES_URL);
      a = await startTestApp(env, { databaseUrl: db.url });
      b = await startTestApp(env, { databaseUrl: db.url });
    }, 60_000);
    afterAll(async () => {
      await a?.stop();
      await b?.stop();
      await db?.drop();
    });
    beforeEach(async () => {
      t = await awsTenant(a);
    });

    /** A signed GenerateRandom to `app` with `key`: the status and the AWS error type, if any. */
    async function random(
      app: TestApp,
      key: { accessKeyId: string; secretAccessKey: string },
    ): Promise<[number, string | undefined]> {
      const { headers, body } = signedRequest(
        app.url,
        key,
        'TrentService.GenerateRandom',
        JSON.stringify({ NumberOfBytes: 8 }),
      );
      const res = await fetch(app.url, { method: 'POST', headers, body });
      const answer = (await res.json()) as { __type?: string };
      return [res.status, answer.__type];
    }

    /** A signed call of `target` to `app` with the tenant's key: the status and the answer. */
    async function call(
      app: TestApp,
      target: string,
      input: Record<string, unknown>,
    ): Promise<[number, Record<string, unknown>]> {
      const { headers, body } = signedRequest(app.url, t, target, JSON.stringify(input));
      const res = await fetch(app.url, { method: 'POST', headers, body });
      return [res.status, (await res.json()) as Record<string, unknown>];
    }

    /**
     * Resolves once `app` has applied the change of `kind` to `ref` (listeners run in the order
     * they were registered, and the access-key and alias caches registered theirs at B's first AWS
     * request, so their entries are gone by then); rejects after FEED_BOUND_MS.
     */
    function applied(
      app: TestApp,
      ref: string,
      kind: 'client' | 'alias' | 'key' = 'client',
    ): Promise<void> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`instance B saw no ${kind} change in ${FEED_BOUND_MS} ms`)),
          FEED_BOUND_MS,
        );
        app.ctx.changes.on(kind, (c) => {
          if (c.ref !== ref) return;
          clearTimeout(timer);
          resolve();
        });
      });
    }

    it('when instance A deletes an access key that instance B has cached, then B refuses it once its feed carries the change', async () => {
      expect(await random(b, t)).toEqual([200, undefined]);
      const seen = applied(b, t.clientId);
      const path = `/api/v3/admin/tenants/${t.tenantId}/workloads/${t.workloadId}/access-keys/${t.accessKeyId}`;
      expect((await api(a, 'DELETE', path, t.admin)).status).toBe(204);
      await seen;
      expect(await random(b, t)).toEqual([400, 'UnrecognizedClientException']);
      // A never served the key and refuses it too (it reads the database).
      expect(await random(a, t)).toEqual([400, 'UnrecognizedClientException']);
    }, 30_000);

    it('when instance A disables the workload, then B refuses its access key once the feed carries it, and accepts it again after A enables it', async () => {
      expect(await random(b, t)).toEqual([200, undefined]);
      const base = `/api/v3/admin/tenants/${t.tenantId}/workloads/${t.workloadId}`;
      const disabled = applied(b, t.clientId);
      expect((await api(a, 'POST', `${base}/disable`, t.admin)).status).toBe(200);
      await disabled;
      expect(await random(b, t)).toEqual([400, 'UnrecognizedClientException']);
      const enabled = applied(b, t.clientId);
      expect((await api(a, 'POST', `${base}/enable`, t.admin)).status).toBe(200);
      await enabled;
      expect(await random(b, t)).toEqual([200, undefined]);
    }, 30_000);

    it('when instance A suspends the tenant, then B refuses its workload’s access key once the feed carries it', async () => {
      expect(await random(b, t)).toEqual([200, undefined]);
      const seen = applied(b, t.clientId);
      const suspend = `/api/v3/admin/platform/tenants/${t.tenantId}/suspend`;
      expect((await api(a, 'POST', suspend, t.admin)).status).toBe(200);
      await seen;
      expect(await random(b, t)).toEqual([400, 'UnrecognizedClientException']);
    }, 30_000);

    it('when instance A creates, deletes and re-points an alias, then B encrypts under what the alias names once its feed carries each change', async () => {
      const created: string[] = [];
      for (const _ of [1, 2]) {
        const [status, answer] = await call(a, 'TrentService.CreateKey', {});
        expect(status).toBe(200);
        created.push((answer.KeyMetadata as { KeyId: string }).KeyId);
      }
      const alias = 'alias/cross-instance';
      const ref = `${t.tenantId}:${alias}`;
      const encrypt = async () => {
        const [status, answer] = await call(b, 'TrentService.Encrypt', {
          KeyId: alias,
          Plaintext: Buffer.from('hello').toString('base64'),
        });
        return status === 200 ? String(answer.KeyId).split('/').pop() : answer.__type;
      };
      // B learns that the alias names nothing, then A creates it.
      expect(await encrypt()).toBe('NotFoundException');
      let seen = applied(b, ref, 'alias');
      expect(
        (
          await call(a, 'TrentService.CreateAlias', { AliasName: alias, TargetKeyId: created[0] })
        )[0],
      ).toBe(200);
      await seen;
      expect(await encrypt()).toBe(created[0]);
      // A deletes it and points it at the other key.
      seen = applied(b, ref, 'alias');
      expect((await call(a, 'TrentService.DeleteAlias', { AliasName: alias }))[0]).toBe(200);
      await seen;
      expect(await encrypt()).toBe('NotFoundException');
      seen = applied(b, ref, 'alias');
      expect(
        (
          await call(a, 'TrentService.CreateAlias', { AliasName: alias, TargetKeyId: created[1] })
        )[0],
      ).toBe(200);
      await seen;
      expect(await encrypt()).toBe(created[1]);
    }, 30_000);

    it('when instance A schedules, cancels and natively resumes a deletion, then B refuses and serves the key as each change reaches its feed', async () => {
      const [, created] = await call(a, 'TrentService.CreateKey', {});
      const kid = (created.KeyMetadata as { KeyId: string }).KeyId;
      const ref = `${t.tenantId}:${kid}`;
      const encrypt = async () => {
        const [status, answer] = await call(b, 'TrentService.Encrypt', {
          KeyId: kid,
          Plaintext: Buffer.from('hello').toString('base64'),
        });
        return status === 200 ? 'ok' : answer.__type;
      };
      // B caches the key as active.
      expect(await encrypt()).toBe('ok');
      let seen = applied(b, ref, 'key');
      expect(
        (
          await call(a, 'TrentService.ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 })
        )[0],
      ).toBe(200);
      await seen;
      expect(await encrypt()).toBe('KMSInvalidStateException');
      seen = applied(b, ref, 'key');
      expect((await call(a, 'TrentService.CancelKeyDeletion', { KeyId: kid }))[0]).toBe(200);
      await seen;
      expect(await encrypt()).toBe('DisabledException');
      // The native resume on A: B serves the key again.
      await call(a, 'TrentService.ScheduleKeyDeletion', { KeyId: kid, PendingWindowInDays: 7 });
      seen = applied(b, ref, 'key');
      const resumed = await api(
        a,
        'POST',
        `/api/v3/admin/tenants/${t.tenantId}/keys/${kid}/resume`,
        t.admin,
      );
      expect(resumed.status).toBe(200);
      await seen;
      expect(await encrypt()).toBe('ok');
    }, 30_000);
  });
}
