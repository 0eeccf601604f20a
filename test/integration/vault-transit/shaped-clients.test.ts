/**
 * The two clients that use Transit most, written from their sources' behaviour and sending the
 * exact requests they send (Vault's Go API client: PUT for every write, X-Vault-Token and
 * X-Vault-Request, no Content-Type, a JSON body from json.Encoder with its trailing newline,
 * Accept-Encoding gzip from Go's transport):
 * - SOPS's hc_vault_transit key source (getsops/sops hcvault/keysource.go): the data key
 *   encrypted with `encrypt/<key>` `{"plaintext"}`, read back from `data.ciphertext`, and
 *   decrypted with `decrypt/<key>` `{"ciphertext"}`, `data.plaintext` base64.
 * - The transit seal of Vault and OpenBao (go-kms-wrapping wrappers/transit): renew-self with
 *   increment 0 at start (a refusal or a non-renewable token disables renewal), then encrypt and
 *   decrypt the same way; the key id is the ciphertext's second ':'-separated part, so it must
 *   split into exactly three and change when the key rotates.
 */
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { transitTenant, vault, type TransitTenant } from './support.ts';

/** One request as Vault's Go client writes it (Logical().Write / Read, Auth().Token()). */
function goClient(
  app: TestApp,
  method: 'PUT' | 'GET',
  path: string,
  token: string,
  body?: Record<string, unknown>,
  namespace?: string,
): Promise<{ status: number; body: any; headers: Record<string, unknown> }> {
  const payload = body === undefined ? undefined : Buffer.from(`${JSON.stringify(body)}\n`);
  const { hostname, port } = new URL(app.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname,
        port,
        method,
        path: `/v1/${path}`,
        headers: {
          'User-Agent': 'Go-http-client/1.1',
          'X-Vault-Request': 'true',
          'X-Vault-Token': token,
          ...(namespace ? { 'X-Vault-Namespace': namespace } : {}),
          'Accept-Encoding': 'gzip',
          ...(payload ? { 'Content-Length': String(payload.length) } : {}),
        },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            body: text ? JSON.parse(text) : null,
            headers: res.headers,
          });
        });
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('no answer')));
    req.end(payload);
  });
}

describe('Vault Transit API with SOPS-shaped and transit-seal-shaped clients', () => {
  let app: TestApp;
  let t: TransitTenant;

  beforeAll(async () => {
    app = await startTestApp();
    t = await transitTenant(app);
    expect((await vault(app, 'POST', 'transit/keys/sops', t.token, {})).status).toBe(204);
    expect((await vault(app, 'POST', 'transit/keys/autounseal', t.token, {})).status).toBe(204);
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('when SOPS encrypts its data key and decrypts it again, then the key comes back', async () => {
    const dataKey = randomBytes(32);
    const enc = await goClient(app, 'PUT', 'transit/encrypt/sops', t.token, {
      plaintext: dataKey.toString('base64'),
    });
    expect(enc.status).toBe(200);
    expect(enc.headers['content-type']).toMatch(/^application\/json/);
    const encryptedKey = enc.body.data.ciphertext;
    expect(typeof encryptedKey).toBe('string');
    const dec = await goClient(app, 'PUT', 'transit/decrypt/sops', t.token, {
      ciphertext: encryptedKey,
    });
    expect(dec.status).toBe(200);
    expect(Buffer.from(dec.body.data.plaintext, 'base64').equals(dataKey)).toBe(true);
    // SOPS with VAULT_NAMESPACE set to the tenant: the same answer.
    const inNamespace = await goClient(
      app,
      'PUT',
      'transit/decrypt/sops',
      t.token,
      { ciphertext: encryptedKey },
      t.tenantId,
    );
    expect(inNamespace.body.data.plaintext).toBe(dec.body.data.plaintext);
  });

  it('when the transit seal starts, wraps its root key, and the key rotates, then renewal is declined cleanly, unwrap works and the key id follows the version', async () => {
    // RenewTokenAsSelf(token, 0): success with renewable false, so no lifetime watcher renews.
    const renewed = await goClient(app, 'PUT', 'auth/token/renew-self', t.token, { increment: 0 });
    expect(renewed.status).toBe(200);
    expect(renewed.body.auth).toMatchObject({ client_token: t.token, renewable: false });
    expect(renewed.body.auth.lease_duration).toBeGreaterThan(0);
    const lookup = await goClient(app, 'GET', 'auth/token/lookup-self', t.token);
    expect(lookup.body.data.renewable).toBe(false);

    const rootKey = randomBytes(32);
    const wrap = async () => {
      const r = await goClient(app, 'PUT', 'transit/encrypt/autounseal', t.token, {
        plaintext: rootKey.toString('base64'),
      });
      expect(r.status).toBe(200);
      const parts = (r.body.data.ciphertext as string).split(':');
      expect(parts).toHaveLength(3);
      return { ciphertext: r.body.data.ciphertext as string, keyId: parts[1] };
    };
    const unwrap = async (ciphertext: string) => {
      const r = await goClient(app, 'PUT', 'transit/decrypt/autounseal', t.token, { ciphertext });
      expect(r.status).toBe(200);
      return Buffer.from(r.body.data.plaintext, 'base64');
    };
    const first = await wrap();
    expect(first.keyId).toBe('v1');
    expect((await unwrap(first.ciphertext)).equals(rootKey)).toBe(true);
    expect((await goClient(app, 'PUT', 'transit/keys/autounseal/rotate', t.token, {})).status).toBe(
      200,
    );
    const second = await wrap();
    expect(second.keyId).toBe('v2');
    // The root key wrapped before the rotation still unwraps (the seal's stored blob).
    expect((await unwrap(first.ciphertext)).equals(rootKey)).toBe(true);
    expect((await unwrap(second.ciphertext)).equals(rootKey)).toBe(true);
  });

  it('when the seal is started with a token that is not valid, then renewal and encrypt answer 403 permission denied, as Vault does', async () => {
    const renewal = await goClient(app, 'PUT', 'auth/token/renew-self', 'hvs.not-a-keyward-token', {
      increment: 0,
    });
    expect(renewal).toMatchObject({ status: 403, body: { errors: ['permission denied'] } });
    const enc = await goClient(
      app,
      'PUT',
      'transit/encrypt/autounseal',
      'hvs.not-a-keyward-token',
      { plaintext: 'eA==' },
    );
    expect(enc).toMatchObject({ status: 403, body: { errors: ['permission denied'] } });
  });
});
