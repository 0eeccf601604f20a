/**
 * What a caller without credentials can do to others through the token endpoint:
 * lock a workload out by sending wrong secrets for its client id (#4), and write without limit
 * into the platform tenant's audit chain with made-up client ids (#5). Every case runs on the
 * runtime lane's exact path and on the variant only Express serves (a query string). Budgets
 * keyed on an address use loopback addresses of their own per case (127.0.x.y).
 */
import { request } from 'node:http';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { makeTenant, postFormFrom } from '../../../support/auth.ts';
import { UNKNOWN_CLIENT_ACTOR } from '../../../shared/audit/actor.ts';

const LANE = '/api/v3/auth/token';
const EXPRESS = '/api/v3/auth/token?via=express';
const PATHS = [
  ['the runtime lane', LANE, 1],
  ['Express', EXPRESS, 2],
] as const;

/** POSTs JSON from another loopback address (the legacy login takes JSON). */
function postJsonFrom(
  app: TestApp,
  localAddress: string,
  path: string,
  json: unknown,
): Promise<number> {
  const body = JSON.stringify(json);
  return new Promise((resolve, reject) => {
    const req = request(
      `${app.url}${path}`,
      {
        method: 'POST',
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe(`unauthenticated abuse of the token endpoint (${TEST_ENGINE})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ RATE_LIMIT_FAILURES_PER_MINUTE: '3' });
  }, 60_000);
  afterAll(async () => {
    await app.stop();
  });

  const clientCredentials = (from: string, path: string, clientId: string, secret: string) =>
    postFormFrom(app, from, path, {
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: secret,
    });

  describe.each(PATHS)('on %s', (_name, path, net) => {
    it("when wrong secrets for a client id spend one address's budget, then the right secret from another address still gets a token (anyone could lock a workload out)", async () => {
      const w = await makeTenant(app, ['crypto.encrypt']);
      const attacker = `127.0.${net}.10`;
      const statuses: number[] = [];
      for (let i = 0; i < 4; i += 1)
        statuses.push(
          (await clientCredentials(attacker, path, w.clientId, crypto.randomUUID())).status,
        );
      expect(statuses).toEqual([400, 400, 400, 429]);
      // The budget holds where it was spent...
      expect((await clientCredentials(attacker, path, w.clientId, w.clientSecret)).status).toBe(
        429,
      );
      // ...and only there.
      const owner = await clientCredentials(`127.0.${net}.11`, path, w.clientId, w.clientSecret);
      expect(owner.status).toBe(200);
      expect(owner.body.access_token).toEqual(expect.any(String));
    });

    it('when one address sends made-up client ids, then after the failure budget it gets 429 (each id had a budget of its own), while a real client at that address still gets a token', async () => {
      const w = await makeTenant(app, ['crypto.encrypt']);
      const from = `127.0.${net}.20`;
      const statuses: number[] = [];
      for (let i = 0; i < 6; i += 1)
        statuses.push(
          (await clientCredentials(from, path, crypto.randomUUID(), crypto.randomUUID())).status,
        );
      expect(statuses).toEqual([401, 401, 401, 429, 429, 429]);
      expect((await clientCredentials(from, path, w.clientId, w.clientSecret)).status).toBe(200);
    });

    it("when made-up client ids fail, then the platform's chain gets tallied events with a count and our actor, never one event per request with the sender's text", async () => {
      const from = `127.0.${net}.30`;
      const garbage = `<script>${'x'.repeat(500)}`;
      const ids = [crypto.randomUUID(), garbage, crypto.randomUUID()];
      for (const id of ids)
        expect((await clientCredentials(from, path, id, 'wrong')).status).toBe(401);
      await app.ctx.audit.flush();
      // Every failure in the platform's chain naming no real client: ours from this address, or
      // one carrying whatever the sender wrote.
      const events = (
        await app.ctx
          .db('audit_events')
          .where({ tenant_id: app.platformTenantId, action: 'auth.token.client_credentials' })
          .whereNot('actor', 'like', 'client:________-____-____-____-____________')
          .orderBy('seq')
      ).filter((e) => e.actor !== UNKNOWN_CLIENT_ACTOR || e.target === `address:${from}`);
      const details = events.map((e) =>
        typeof e.details === 'string' ? JSON.parse(e.details) : e.details,
      );
      // One event per tally window (a window may end between the requests): the counts add up.
      expect(events.map((e) => [e.actor, e.outcome, e.target])).toEqual(
        events.map(() => [UNKNOWN_CLIENT_ACTOR, 'failure', `address:${from}`]),
      );
      expect(details.reduce((n, d) => n + (d.count as number), 0)).toBe(ids.length);
      expect(JSON.stringify(events)).not.toContain('<script>');
    });
  });

  it('when the legacy login gets wrong secrets from one address, then the workload still logs in from another (the same lockout through the legacy door)', async () => {
    const w = await makeTenant(app, ['crypto.encrypt']);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i += 1)
      statuses.push(
        await postJsonFrom(app, '127.0.3.10', '/api/authenticate/app', {
          clientId: w.clientId,
          clientSecret: crypto.randomUUID(),
        }),
      );
    expect(statuses).toEqual([400, 400, 400, 429]);
    expect(
      await postJsonFrom(app, '127.0.3.11', '/api/authenticate/app', {
        clientId: w.clientId,
        clientSecret: w.clientSecret,
      }),
    ).toBe(200);
  });
});
