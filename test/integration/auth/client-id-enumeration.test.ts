/**
 * Failed client authentication says nothing of whether the client id exists: the token endpoint
 * and introspection answer an unknown id, a disabled workload and a known one with a wrong
 * secret with the same challenge and the same work (no database read that a known, cached id
 * does not also make); and introspection, the issuer speaking of its own tokens, allows no clock
 * leeway past exp.
 */
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { adminToken, makeTenant, postForm, type TestTenant } from '../../../support/auth.ts';
import { AUDIENCE_CORE } from '../../../api/services/auth/access-tokens.ts';

const TOKEN = '/api/v3/auth/token';
const INTROSPECT = '/api/v3/auth/token/introspect';
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`, 'utf8').toString('base64')}`;
const CC = { grant_type: 'client_credentials' };

describe(`failed client authentication, known and unknown client ids alike (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let known: TestTenant;
  let disabled: TestTenant;
  beforeAll(async () => {
    // Budgets out of the way: these tests send many failures from one address.
    app = await startTestApp({ RATE_LIMIT_FAILURES_PER_MINUTE: '100000' });
    known = await makeTenant(app, ['auth.introspect.self']);
    disabled = await makeTenant(app, ['auth.introspect.self']);
    await app.ctx
      .db('workloads')
      .where({ client_id: disabled.clientId })
      .update({ disabled: true });
    await app.ctx.auth.secrets.invalidate(disabled.clientId);
  });
  afterAll(async () => {
    await app.stop();
  });

  /** Every failed attempt, by Basic and by the form, on both endpoints, for one client id. */
  const attempts = (clientId: string) => [
    () => postForm(app, TOKEN, CC, { authorization: basic(clientId, crypto.randomUUID()) }),
    () =>
      postForm(
        app,
        INTROSPECT,
        { token: 'x' },
        { authorization: basic(clientId, crypto.randomUUID()) },
      ),
    () =>
      postForm(app, INTROSPECT, {
        token: 'x',
        client_id: clientId,
        client_secret: crypto.randomUUID(),
      }),
  ];

  it('when a known client sends a wrong secret, a disabled one any secret and an unknown id any secret, then each answer carries the same 401 and the same challenge', async () => {
    const seen = new Map<string, string[]>();
    for (const [who, clientId] of [
      ['known', known.clientId],
      ['disabled', disabled.clientId],
      ['unknown', crypto.randomUUID()],
    ]) {
      const answers: string[] = [];
      for (const attempt of attempts(clientId)) {
        const r = await attempt();
        answers.push(`${r.status} ${r.body.error} ${r.headers.get('www-authenticate')}`);
      }
      seen.set(who, answers);
    }
    const expected = Array(3).fill('401 invalid_client Basic realm="keyward", charset="UTF-8"');
    expect(Object.fromEntries(seen)).toEqual({
      known: expected,
      disabled: expected,
      unknown: expected,
    });
  });

  it('when the same unknown client id is tried again and again, then it reads the workloads no more often than a known client id does', async () => {
    const reads = async (clientId: string) => {
      // The first attempt loads (or finds nothing); the ones after it must all be answered alike.
      for (const attempt of attempts(clientId)) await attempt();
      let n = 0;
      const count = (q: { sql: string }) => {
        if (/\bworkloads\b/.test(q.sql)) n += 1;
      };
      app.ctx.db.on('query', count);
      try {
        for (let i = 0; i < 5; i++) for (const attempt of attempts(clientId)) await attempt();
      } finally {
        app.ctx.db.off('query', count);
      }
      return n;
    };
    const unknownId = crypto.randomUUID();
    expect({ known: await reads(known.clientId), unknown: await reads(unknownId) }).toEqual({
      known: 0,
      unknown: 0,
    });
  });

  it('when the secret check has no workload to compare with, then it still compares (against a dummy) and refuses', () => {
    const { secrets } = app.ctx.auth;
    expect(secrets.matches(null, known.clientSecret)).toBe(false);
    expect(secrets.matches(null, '')).toBe(false);
  });

  it('when a token is introspected a few seconds after its exp, then it is inactive, although the clock leeway of verification would still accept it', async () => {
    const creds = (await app.ctx.auth.secrets.lookup(known.clientId))!;
    const { token, claims } = await app.ctx.auth.tokens.issue(
      {
        sub: creds.workloadId,
        aud: AUDIENCE_CORE,
        tenantId: creds.tenantId,
        permissions: creds.permissions,
        client_id: creds.clientId,
        kind: 'workload',
      },
      -5,
    );
    expect(claims.exp).toBeLessThan(Date.now() / 1000);
    const admin = await adminToken(app);
    const byAdmin = await postForm(
      app,
      INTROSPECT,
      { token },
      { authorization: `Bearer ${admin}` },
    );
    const byClient = await postForm(app, INTROSPECT, {
      token,
      client_id: known.clientId,
      client_secret: known.clientSecret,
    });
    expect([byAdmin.status, byAdmin.body, byClient.status, byClient.body]).toEqual([
      200,
      { active: false },
      200,
      { active: false },
    ]);
  });
});
