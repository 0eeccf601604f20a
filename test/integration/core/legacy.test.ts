import { startTestApp, type TestApp } from '../../../support/app.ts';
import { TEST_ENGINE } from '../../../support/database.ts';
import { api, makeTenant, workloadToken } from '../../../support/auth.ts';

async function legacyLogin(app: TestApp, clientId: string, clientSecret: string): Promise<string> {
  const res = await fetch(`${app.url}/api/authenticate/app`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, clientSecret }),
  });
  return ((await res.json()) as any).accessToken;
}

describe(`legacy API (${TEST_ENGINE})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.stop();
  });

  it('when a legacy token holds the roles, then it generates, lists, imports, encrypts, decrypts, signs and verifies', async () => {
    const t = await makeTenant(app, [
      'crypto.keys.read',
      'admin.keys.create',
      'admin.keys.import',
      'crypto.encrypt',
      'crypto.decrypt',
      'crypto.sign',
      'crypto.verify',
    ]);
    const token = await legacyLogin(app, t.clientId, t.clientSecret);
    expect(
      (
        await api(app, 'POST', '/api/key-management/keys', token, {
          type: 'aes-256',
          kid: 'legacy-aes',
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await api(app, 'POST', '/api/key-management/keys', token, {
          type: 'ec-p256',
          kid: 'legacy-ec',
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await api(app, 'POST', '/api/key-management/keys/import', token, {
          kid: 'raw',
          key: Buffer.alloc(32, 9).toString('base64'),
        })
      ).status,
    ).toBe(201);
    const list = await api(app, 'GET', '/api/key-management/keys', token);
    expect((list.body.keys as Array<{ kid: string }>).map((k) => k.kid).sort()).toEqual([
      'legacy-aes',
      'legacy-ec',
      'raw',
    ]);
    const data = Buffer.from('legacy').toString('base64');
    const enc = await api(app, 'POST', '/api/crypto/encrypt', token, { kid: 'raw', data });
    expect(
      (await api(app, 'POST', '/api/crypto/decrypt', token, { ciphertext: enc.body.ciphertext }))
        .body.data,
    ).toBe(data);
    const sig = await api(app, 'POST', '/api/crypto/sign', token, { kid: 'legacy-ec', data });
    expect(
      (
        await api(app, 'POST', '/api/crypto/verify', token, {
          kid: 'legacy-ec',
          data,
          signature: sig.body.signature,
        })
      ).body.valid,
    ).toBe(true);
  });

  it('when the legacy token lacks the role, then 401; when there is no token or a v3 token, then 401', async () => {
    const t = await makeTenant(app, ['crypto.encrypt']);
    const token = await legacyLogin(app, t.clientId, t.clientSecret);
    await api(app, 'POST', '/api/key-management/keys', token, { type: 'aes-256' });
    expect(
      (await api(app, 'POST', '/api/crypto/sign', token, { kid: 'x', data: 'AA==' })).status,
    ).toBe(401);
    expect((await api(app, 'GET', '/api/key-management/keys', token)).status).toBe(401);
    expect((await api(app, 'GET', '/api/key-management/keys')).status).toBe(401);
    expect(
      (
        await api(app, 'POST', '/api/crypto/encrypt', await workloadToken(app, t), {
          kid: 'x',
          data: 'AA==',
        })
      ).status,
    ).toBe(401);
    const denied = await api(app, 'POST', '/api/crypto/decrypt', token, { ciphertext: 'x' });
    expect(denied.status).toBe(401);
    expect(denied.body.error).toBeUndefined();
  });

  it('when a legacy client calls one runtime endpoint past RATE_LIMIT_API_PER_MINUTE, then 429 with Retry-After (the legacy routes had no budget)', async () => {
    const limited = await startTestApp({ RATE_LIMIT_API_PER_MINUTE: '3' });
    try {
      const t = await makeTenant(limited, ['admin.keys.create', 'crypto.encrypt']);
      const token = await legacyLogin(limited, t.clientId, t.clientSecret);
      await api(limited, 'POST', '/api/key-management/keys', token, { type: 'aes-256', kid: 'rl' });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i += 1) {
        statuses.push(
          (await api(limited, 'POST', '/api/crypto/encrypt', token, { kid: 'rl', data: 'AA==' }))
            .status,
        );
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
      const refused = await api(limited, 'POST', '/api/crypto/encrypt', token, {
        kid: 'rl',
        data: 'AA==',
      });
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await limited.stop();
    }
  });
});
