import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { adminToken, api, makeTenant, userToken, type TestTenant } from '../../../support/auth.ts';
import { signMessage, verifyMessage } from '../../../shared/crypto/sign.ts';
import { sleep } from '../../support/time.ts';

const PERMS = [
  'admin.keys.read',
  'admin.keys.create',
  'admin.keys.revoke',
  'admin.keys.suspend',
  'admin.policy.overrides.write',
  'admin.cryptographicexchange.create',
  'admin.cryptographicexchange.read',
  'admin.cryptographicexchange.accept',
  'admin.cryptographicexchange.reject',
  'admin.cryptographicexchange.cancel',
];

interface Side {
  t: TestTenant;
  token: string;
  base: string;
  keys: string;
}
/** A public JWK without its kid, which differs between the two tenants' copies. */
const withoutKid = (jwk: unknown) => ({ ...(jwk as Record<string, unknown>), kid: undefined });
type Exchange = {
  id: string;
  state: string;
  direction: string;
  acceptedKid?: string | null;
  publicKeySha256: string | null;
  mode: string;
};

describe(`cryptographic exchanges (${TEST_ENGINE})`, () => {
  let app: TestApp;
  let a: Side;
  let b: Side;
  let c: Side;
  const side = async (name: string): Promise<Side> => {
    const t = await makeTenant(app, PERMS, name);
    return {
      t,
      token: await userToken(app, t),
      base: `/api/v3/admin/tenants/${t.tenantId}/cryptographic-exchanges`,
      keys: `/api/v3/admin/tenants/${t.tenantId}/keys`,
    };
  };
  const offer = (body: Record<string, unknown>, from = a) =>
    api(app, 'POST', from.base, from.token, { toTenantId: b.t.tenantId, ...body });
  const events = async (tenantId: string, exchangeId: string) => {
    await app.ctx.audit.flush();
    return (
      await app.ctx
        .db('audit_events')
        .where({ tenant_id: tenantId, target: exchangeId })
        .orderBy('seq')
    ).map((e) => e.action);
  };

  beforeAll(async () => {
    app = await startTestApp();
    [a, b, c] = [await side('ex-a'), await side('ex-b'), await side('ex-c')];
    for (const [kid, type, usage] of [
      ['sig', 'ec-p256', 'sign'],
      ['sig384', 'ec-p384', 'sign'],
      ['secret', 'aes-256', 'encrypt'],
      ['ml', 'ml-dsa-44', 'sign'],
      ['xw', 'x25519-ml-kem-768', 'encrypt'],
    ]) {
      expect((await api(app, 'POST', a.keys, a.token, { kid, type, usage })).status).toBe(201);
    }
    for (const [kid, type, usage] of [
      ['wrap-rsa', 'rsa-2048', 'encrypt'],
      ['wrap-ec', 'ec-p256', 'encrypt'],
      ['signer', 'ed25519', 'sign'],
      ['wrap-old', 'aes-256', 'encrypt'],
    ]) {
      expect((await api(app, 'POST', b.keys, b.token, { kid, type, usage })).status).toBe(201);
    }
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when A offers the public part of a signing key and B accepts, then B holds a verify-only copy and both audit chains record each step', async () => {
    const made = await offer({ kid: 'sig', mode: 'public' });
    expect(made.status).toBe(201);
    const ex = made.body as unknown as Exchange & { expiresAt: string };
    expect(ex).toMatchObject({
      state: 'pending',
      direction: 'outgoing',
      mode: 'public',
      publicKeySha256: expect.stringMatching(/^[\w-]{43}$/),
    });
    expect(Date.parse(ex.expiresAt) - Date.now()).toBeGreaterThan(23.9 * 3600 * 1000);
    expect(JSON.stringify(made.body)).not.toMatch(/payload|material/);

    const incoming = await api(app, 'GET', `${b.base}?direction=incoming`, b.token);
    expect((incoming.body.items as Exchange[]).map((e) => [e.id, e.direction])).toEqual([
      [ex.id, 'incoming'],
    ]);
    const accepted = await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, {
      kid: 'from-a',
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({
      exchange: { state: 'accepted', acceptedKid: 'from-a' },
      key: { kid: 'from-a', type: 'ec-p256', usage: 'sign', source: 'exchange' },
    });
    expect(JSON.stringify(accepted.body)).not.toMatch(/"d":/);

    const original = (await app.ctx.keys.get(a.t.tenantId, 'sig')).versions.get(1)!;
    const copy = (await app.ctx.keys.get(b.t.tenantId, 'from-a')).versions.get(1)!;
    expect(copy.privateKey).toBeUndefined();
    const data = Buffer.from('signed in A, verified in B');
    const { signature } = signMessage(original, { data });
    expect(verifyMessage(copy, { data }, signature)).toBe(true);
    expect(() => signMessage(copy, { data })).toThrow(/no private key/);
    expect(
      (await app.ctx.db('cryptographic_exchanges').where({ id: ex.id }).first()).payload,
    ).toBeNull();
    // A sees the outcome but not the kid B chose.
    expect((await api(app, 'GET', `${a.base}/${ex.id}`, a.token)).body).not.toHaveProperty(
      'acceptedKid',
    );
    for (const tenant of [a, b])
      expect(await events(tenant.t.tenantId, ex.id)).toEqual([
        'cryptographicexchange.offer',
        'cryptographicexchange.accept',
      ]);
  });

  it("when A offers an AES key wrapped for B's RSA key, then the stored offer is a JWE for that key and B's accepted copy is the same key", async () => {
    const ex = (await offer({ kid: 'secret', mode: 'wrapped', wrappingKid: 'wrap-rsa' }))
      .body as unknown as Exchange;
    expect(ex.publicKeySha256).toBeNull();
    const row = await app.ctx.db('cryptographic_exchanges').where({ id: ex.id }).first();
    const header = JSON.parse(Buffer.from(row.payload.split('.')[0], 'base64url').toString());
    expect(header).toMatchObject({
      alg: 'RSA-OAEP-256',
      enc: 'A256GCM',
      kid: 'wrap-rsa#1',
      ver: 1,
    });
    const aesKey = (await app.ctx.keys.get(a.t.tenantId, 'secret')).versions
      .get(1)!
      .secretKey!.export();
    expect(row.payload).not.toContain(aesKey.toString('base64url'));
    expect(Buffer.from(row.payload).includes(aesKey)).toBe(false);

    const accepted = await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, {});
    expect(accepted.status).toBe(200);
    const kid = `exchange-${ex.id}`;
    expect(accepted.body).toMatchObject({ key: { kid, type: 'aes-256', source: 'exchange' } });
    expect(
      (await app.ctx.keys.get(b.t.tenantId, kid)).versions
        .get(1)!
        .secretKey!.export()
        .equals(aesKey),
    ).toBe(true);
  });

  it("when A offers a signing key wrapped for B's EC key (ECDH-ES+A256KW), then B's copy signs and A's key verifies it", async () => {
    const ex = (await offer({ kid: 'sig384', mode: 'wrapped', wrappingKid: 'wrap-ec' }))
      .body as unknown as Exchange;
    const row = await app.ctx.db('cryptographic_exchanges').where({ id: ex.id }).first();
    expect(
      JSON.parse(Buffer.from(row.payload.split('.')[0], 'base64url').toString()),
    ).toMatchObject({ alg: 'ECDH-ES+A256KW', kid: 'wrap-ec#1' });
    expect(
      (await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, { kid: 'sig384-copy' })).status,
    ).toBe(200);
    const copy = (await app.ctx.keys.get(b.t.tenantId, 'sig384-copy')).versions.get(1)!;
    const original = (await app.ctx.keys.get(a.t.tenantId, 'sig384')).versions.get(1)!;
    const data = Buffer.from('signed in B with the exchanged key');
    expect(verifyMessage(original, { data }, signMessage(copy, { data }).signature)).toBe(true);
  });

  it("when the public part of a hybrid X-Wing key is exchanged, then B's copy has the same encapsulation key and no private part", async () => {
    const ex = (await offer({ kid: 'xw', mode: 'public' })).body as unknown as Exchange;
    const accepted = await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, {
      kid: 'xw-copy',
    });
    expect(accepted.status).toBe(200);
    expect(withoutKid((accepted.body.key as { publicKey: unknown }).publicKey)).toEqual(
      withoutKid((await api(app, 'GET', `${a.keys}/xw`, a.token)).body.publicKey),
    );
    const copy = (await app.ctx.keys.get(b.t.tenantId, 'xw-copy')).versions.get(1)!;
    expect(copy.components!.every((c) => c.privateKey === undefined)).toBe(true);
  });

  it("when a third tenant looks at or acts on the exchange, then 403 on the others' paths and 404 on its own, and it never lists it", async () => {
    const ex = (await offer({ kid: 'sig', mode: 'public' })).body as unknown as Exchange;
    expect((await api(app, 'GET', c.base, c.token)).body.items).toEqual([]);
    for (const [method, suffix] of [
      ['GET', ''],
      ['POST', '/accept'],
      ['POST', '/reject'],
      ['POST', '/cancel'],
    ]) {
      expect(
        (
          await api(
            app,
            method,
            `${c.base}/${ex.id}${suffix}`,
            c.token,
            method === 'POST' ? {} : undefined,
          )
        ).status,
      ).toBe(404);
      for (const other of [a, b])
        expect(
          (
            await api(
              app,
              method,
              `${other.base}/${ex.id}${suffix}`,
              c.token,
              method === 'POST' ? {} : undefined,
            )
          ).status,
        ).toBe(403);
    }
    expect((await api(app, 'GET', `${b.base}/${ex.id}`, b.token)).body.state).toBe('pending');
  });

  it('when B rejects, then A cannot reject it for B and B cannot cancel it; a decided offer cannot be accepted', async () => {
    const ex = (await offer({ kid: 'sig', mode: 'public' })).body as unknown as Exchange;
    expect((await api(app, 'POST', `${a.base}/${ex.id}/reject`, a.token, {})).status).toBe(403);
    expect((await api(app, 'POST', `${b.base}/${ex.id}/cancel`, b.token, {})).status).toBe(403);
    expect((await api(app, 'POST', `${a.base}/${ex.id}/accept`, a.token, {})).status).toBe(403);
    const rejected = await api(app, 'POST', `${b.base}/${ex.id}/reject`, b.token, {
      reason: 'not needed',
    });
    expect(rejected.body).toMatchObject({ state: 'rejected' });
    const again = await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, {});
    expect(again.status).toBe(409);
    expect(again.body.type).toMatch(/exchange-not-pending$/);
    for (const tenant of [a, b])
      expect(await events(tenant.t.tenantId, ex.id)).toEqual([
        'cryptographicexchange.offer',
        'cryptographicexchange.reject',
      ]);
  });

  it('when a reason is longer than 200 characters, then the offer is closed and the audit keeps its first 200; a reason that is not a string is 400 naming it', async () => {
    const ex = (await offer({ kid: 'sig', mode: 'public' })).body as unknown as Exchange;
    const wrong = await api(app, 'POST', `${b.base}/${ex.id}/reject`, b.token, { reason: 7 });
    expect([wrong.status, wrong.body.field]).toEqual([400, 'reason']);
    const rejected = await api(app, 'POST', `${b.base}/${ex.id}/reject`, b.token, {
      reason: 'r'.repeat(300),
    });
    expect(rejected.body).toMatchObject({ state: 'rejected' });
    await app.ctx.audit.flush();
    const reject = await app.ctx
      .db('audit_events')
      .where({ tenant_id: b.t.tenantId, target: ex.id, action: 'cryptographicexchange.reject' })
      .first();
    const details =
      typeof reject.details === 'string' ? JSON.parse(reject.details) : reject.details;
    expect(details.reason).toBe('r'.repeat(200));
  });

  it('when A cancels, then B can no longer accept and the payload is gone', async () => {
    const ex = (await offer({ kid: 'secret', mode: 'wrapped', wrappingKid: 'wrap-rsa' }))
      .body as unknown as Exchange;
    expect((await api(app, 'POST', `${a.base}/${ex.id}/cancel`, a.token)).body).toMatchObject({
      state: 'cancelled',
    });
    expect((await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, {})).status).toBe(409);
    expect(
      (await app.ctx.db('cryptographic_exchanges').where({ id: ex.id }).first()).payload,
    ).toBeNull();
    expect(await events(b.t.tenantId, ex.id)).toEqual([
      'cryptographicexchange.offer',
      'cryptographicexchange.cancel',
    ]);
  });

  it('when an offer has expired, then accepting answers 410, it reads as expired and its payload is dropped', async () => {
    const ex = (
      await offer({ kid: 'secret', mode: 'wrapped', wrappingKid: 'wrap-rsa', expiresInSeconds: 60 })
    ).body as unknown as Exchange;
    await app.ctx
      .db('cryptographic_exchanges')
      .where({ id: ex.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const r = await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, {});
    expect(r.status).toBe(410);
    expect(r.body.type).toMatch(/exchange-expired$/);
    expect((await api(app, 'GET', `${a.base}/${ex.id}`, a.token)).body.state).toBe('expired');
    expect(
      (await app.ctx.db('cryptographic_exchanges').where({ id: ex.id }).first()).payload,
    ).toBeNull();
    expect(await events(a.t.tenantId, ex.id)).toEqual([
      'cryptographicexchange.offer',
      'cryptographicexchange.expire',
    ]);
  });

  it('when an offer is malformed, then 400; an AES key offered public is 422; a suspended key is 409', async () => {
    const bad: Array<[Record<string, unknown>, number]> = [
      [{ kid: 'sig', mode: 'sideways' }, 400],
      [{ kid: 'sig', mode: 'wrapped' }, 400],
      [{ kid: 'sig', mode: 'public', wrappingKid: 'wrap-rsa' }, 400],
      [{ kid: 'sig', mode: 'public', toTenantId: a.t.tenantId }, 400],
      [{ kid: 'sig', mode: 'public', toTenantId: crypto.randomUUID() }, 400],
      [{ kid: 'sig', mode: 'public', toTenantId: 'not-a-uuid' }, 400],
      [{ kid: 'sig', mode: 'public', expiresInSeconds: 5 }, 400],
      [{ kid: 'nope', mode: 'public' }, 404],
      [{ kid: 'secret', mode: 'public' }, 422],
    ];
    for (const [body, status] of bad)
      expect([body, (await offer(body)).status]).toEqual([body, status]);
    await api(app, 'POST', a.keys, a.token, { kid: 'paused', type: 'ed25519' });
    await api(app, 'POST', `${a.keys}/paused/suspend`, a.token);
    expect((await offer({ kid: 'paused', mode: 'public' })).body.type).toMatch(/key-suspended$/);
  });

  it("when B's policy forbids the type or the kid exists, then 422 or 409 and the offer stays pending; a revoked wrapping key voids it", async () => {
    const ex = (await offer({ kid: 'ml', mode: 'public' })).body as unknown as Exchange;
    await api(app, 'PUT', `/api/v3/admin/tenants/${b.t.tenantId}/policies/overrides`, b.token, {
      allowedKeyTypes: ['aes-256', 'rsa-2048', 'ec-p256', 'ed25519'],
    });
    const refused = await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, {});
    expect(refused.status).toBe(422);
    expect(refused.body.type).toMatch(/policy-violation$/);
    await api(app, 'PUT', `/api/v3/admin/tenants/${b.t.tenantId}/policies/overrides`, b.token, {});
    expect(
      (await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, { kid: 'signer' })).status,
    ).toBe(409);
    expect((await api(app, 'GET', `${b.base}/${ex.id}`, b.token)).body.state).toBe('pending');
    const pqc = await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, { kid: 'ml-copy' });
    expect(pqc.body).toMatchObject({ key: { kid: 'ml-copy', type: 'ml-dsa-44' } });
    expect(withoutKid((pqc.body.key as { publicKey: unknown }).publicKey)).toEqual(
      withoutKid((await api(app, 'GET', `${a.keys}/ml`, a.token)).body.publicKey),
    );

    const wrapped = (await offer({ kid: 'secret', mode: 'wrapped', wrappingKid: 'wrap-old' }))
      .body as unknown as Exchange;
    await api(app, 'POST', `${b.keys}/wrap-old/revoke`, b.token);
    const r = await api(app, 'POST', `${b.base}/${wrapped.id}/accept`, b.token, {});
    expect(r.status).toBe(409);
    expect(r.body.type).toMatch(/key-revoked$/);
  });

  it('when a wrapped payload is moved into another exchange row, then accepting fails the binding check and creates no key', async () => {
    const x = (await offer({ kid: 'secret', mode: 'wrapped', wrappingKid: 'wrap-rsa' }))
      .body as unknown as Exchange;
    const y = (await offer({ kid: 'secret', mode: 'wrapped', wrappingKid: 'wrap-rsa' }))
      .body as unknown as Exchange;
    const { payload } = await app.ctx.db('cryptographic_exchanges').where({ id: x.id }).first();
    await app.ctx.db('cryptographic_exchanges').where({ id: y.id }).update({ payload });
    const before = await app.ctx
      .db('keys')
      .where({ tenant_id: b.t.tenantId })
      .count({ n: '*' })
      .first();
    const r = await api(app, 'POST', `${b.base}/${y.id}/accept`, b.token, { kid: 'moved' });
    expect(r.status).toBe(422);
    expect(r.body.detail).toMatch(/bound to another exchange/);
    expect(
      await app.ctx.db('keys').where({ tenant_id: b.t.tenantId }).count({ n: '*' }).first(),
    ).toEqual(before);
    expect(
      (await api(app, 'POST', `${b.base}/${x.id}/accept`, b.token, { kid: 'x-copy' })).status,
    ).toBe(200);
  });

  it("when the platform administrator reads a tenant's exchanges, then it sees them as that tenant; a role without the permission gets 403", async () => {
    const admin = await adminToken(app);
    const list = await api(app, 'GET', `${a.base}?direction=outgoing&state=accepted`, admin);
    expect(list.status).toBe(200);
    expect(
      (list.body.items as Exchange[]).every(
        (e) => e.direction === 'outgoing' && e.state === 'accepted',
      ),
    ).toBe(true);
    expect((await api(app, 'GET', `${a.base}?state=bogus`, admin)).status).toBe(400);
    const reader = await makeTenant(app, ['admin.cryptographicexchange.read'], 'ex-reader');
    const token = await userToken(app, reader);
    const r = await api(
      app,
      'POST',
      `/api/v3/admin/tenants/${reader.tenantId}/cryptographic-exchanges`,
      token,
      { kid: 'k', toTenantId: b.t.tenantId, mode: 'public' },
    );
    expect(r.status).toBe(403);
  });

  describe.each([
    ['revoke', 'revoked', /key-revoked$/],
    ['suspend', 'suspended', /key-suspended$/],
  ] as const)('when A %ss the offered key', (action, keyState, problemType) => {
    it('then its pending offers read as cancelled on both sides, the payload is gone, both chains audit why, and B cannot accept', async () => {
      const kid = `offered-then-${action}`;
      await api(app, 'POST', a.keys, a.token, { kid, type: 'ec-p256', usage: 'sign' });
      const offers = [
        (await offer({ kid, mode: 'public' })).body as unknown as Exchange,
        (await offer({ kid, mode: 'wrapped', wrappingKid: 'wrap-rsa' }))
          .body as unknown as Exchange,
      ];
      expect((await api(app, 'POST', `${a.keys}/${kid}/${action}`, a.token)).status).toBe(200);
      for (const ex of offers) {
        for (const s of [a, b])
          expect((await api(app, 'GET', `${s.base}/${ex.id}`, s.token)).body.state).toBe(
            'cancelled',
          );
        expect(
          (await app.ctx.db('cryptographic_exchanges').where({ id: ex.id }).first()).payload,
        ).toBeNull();
        const r = await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, {});
        expect([r.status, r.body.type]).toEqual([
          409,
          expect.stringMatching(/exchange-not-pending$/),
        ]);
        await app.ctx.audit.flush();
        for (const s of [a, b]) {
          const cancel = await app.ctx
            .db('audit_events')
            .where({
              tenant_id: s.t.tenantId,
              target: ex.id,
              action: 'cryptographicexchange.cancel',
            })
            .first();
          expect(
            typeof cancel.details === 'string' ? JSON.parse(cancel.details) : cancel.details,
          ).toMatchObject({
            keyState,
            reason: `the offered key was ${keyState}`,
          });
        }
      }
      expect(
        await app.ctx
          .db('keys')
          .where({ tenant_id: b.t.tenantId, source: 'exchange' })
          .whereIn(
            'kid',
            offers.map((e) => `exchange-${e.id}`),
          ),
      ).toEqual([]);
    });

    it('then an offer still pending from before (no cancellation) delivers nothing: accept answers the key state and B holds no new key', async () => {
      const kid = `stale-offer-${action}`;
      await api(app, 'POST', a.keys, a.token, { kid, type: 'ec-p256', usage: 'sign' });
      const ex = (await offer({ kid, mode: 'wrapped', wrappingKid: 'wrap-rsa' }))
        .body as unknown as Exchange;
      // The key changed state the way it did before revocation cancelled offers: the row alone.
      await app.ctx.db('keys').where({ tenant_id: a.t.tenantId, kid }).update({ state: keyState });
      await app.ctx.keys.invalidate(a.t.tenantId, kid);
      const r = await api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, {
        kid: `${kid}-copy`,
      });
      expect([r.status, r.body.type]).toEqual([409, expect.stringMatching(problemType)]);
      expect(r.body.detail).toContain(`the offered key ${kid} is ${keyState}`);
      expect(
        await app.ctx
          .db('keys')
          .where({ tenant_id: b.t.tenantId, kid: `${kid}-copy` })
          .first(),
      ).toBeUndefined();
    });
  });

  it('when the source key is revoked while an acceptance waits for its row lock, then the acceptance answers key-revoked and delivers nothing', async () => {
    const kid = 'revoked-during-accept';
    await api(app, 'POST', a.keys, a.token, { kid, type: 'ec-p256', usage: 'sign' });
    const ex = (await offer({ kid, mode: 'wrapped', wrappingKid: 'wrap-rsa' }))
      .body as unknown as Exchange;
    let accepting: ReturnType<typeof api> | undefined;
    await app.ctx.db.transaction(async (trx) => {
      // A revocation in progress: it holds the key's row lock, as the lifecycle change does.
      await trx('keys').where({ tenant_id: a.t.tenantId, kid }).forUpdate().first();
      accepting = api(app, 'POST', `${b.base}/${ex.id}/accept`, b.token, { kid: `${kid}-copy` });
      await sleep(500);
      await trx('keys').where({ tenant_id: a.t.tenantId, kid }).update({ state: 'revoked' });
    });
    const r = await accepting!;
    expect([r.status, r.body.type]).toEqual([409, expect.stringMatching(/key-revoked$/)]);
    expect(
      await app.ctx
        .db('keys')
        .where({ tenant_id: b.t.tenantId, kid: `${kid}-copy` })
        .first(),
    ).toBeUndefined();
    expect((await api(app, 'GET', `${a.base}/${ex.id}`, a.token)).body.state).toBe('pending');
  });

  /** An offer's answer without what differs between any two offers (`varying`, and id and times). */
  const shape = (body: Record<string, unknown>, varying: string[]): Record<string, unknown> => {
    const drop = new Set(['id', 'createdAt', 'expiresAt', ...varying]);
    return {
      ...Object.fromEntries(Object.entries(body).filter(([k]) => !drop.has(k))),
      members: Object.keys(body).sort(),
    };
  };

  it("when A offers wrapped for a kid B lacks, has suspended or uses to sign, then the answer is the same as for B's real wrapping key; acceptance tells B why nothing was wrapped", async () => {
    await api(app, 'POST', b.keys, b.token, {
      kid: 'wrap-paused',
      type: 'rsa-2048',
      usage: 'encrypt',
    });
    await api(app, 'POST', `${b.keys}/wrap-paused/suspend`, b.token);
    const cases: Array<[string, number, RegExp | null]> = [
      ['wrap-rsa', 200, null],
      ['no-such-key', 404, /key-not-found$/],
      ['wrap-paused', 409, /key-suspended$/],
      ['signer', 409, /conflict$/],
    ];
    const made = [];
    for (const [wrappingKid] of cases) {
      const r = await offer({ kid: 'secret', mode: 'wrapped', wrappingKid });
      made.push(r);
    }
    expect(made.map((r) => r.status)).toEqual(cases.map(() => 201));
    const shapes = made.map((r) => shape(r.body, ['wrappingKid']));
    for (const s of shapes) expect(s).toEqual(shapes[0]);
    expect(made.map((r) => r.body.wrappingKid)).toEqual(cases.map(([k]) => k));
    for (const [i, [wrappingKid, status, type]] of cases.entries()) {
      const r = await api(app, 'POST', `${b.base}/${made[i].body.id}/accept`, b.token, {});
      expect([wrappingKid, r.status]).toEqual([wrappingKid, status]);
      if (type) expect(r.body.type).toMatch(type);
    }
    expect(
      (await api(app, 'POST', `${b.base}/${made[3].body.id}/accept`, b.token, {})).body.detail,
    ).toMatch(/signer was not an active AES, RSA or EC encrypt key of this tenant/);
  });

  it('when A offers a key whose kid B already uses, then the offer answers as for any other and the clash is the conflict B gets at acceptance', async () => {
    await api(app, 'POST', a.keys, a.token, { kid: 'signer', type: 'ed25519', usage: 'sign' });
    await api(app, 'POST', a.keys, a.token, { kid: 'no-twin', type: 'ed25519', usage: 'sign' });
    const [clash, fresh] = [
      await offer({ kid: 'signer', mode: 'public' }),
      await offer({ kid: 'no-twin', mode: 'public' }),
    ];
    expect([clash.status, fresh.status]).toEqual([201, 201]);
    expect(shape(clash.body, ['kid', 'publicKeySha256', 'version'])).toEqual(
      shape(fresh.body, ['kid', 'publicKeySha256', 'version']),
    );
    const r = await api(app, 'POST', `${b.base}/${clash.body.id}/accept`, b.token, {
      kid: 'signer',
    });
    expect([r.status, r.body.type]).toEqual([409, expect.stringMatching(/conflict$/)]);
    expect(
      (
        await api(app, 'POST', `${b.base}/${clash.body.id}/accept`, b.token, {
          kid: 'signer-from-a',
        })
      ).status,
    ).toBe(200);
  });
});
