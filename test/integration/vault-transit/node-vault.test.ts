/**
 * node-vault (npm), the Vault client of Node programs, against Keyward's Vault Transit API:
 * AppRole login with a workload's client credential, then every Transit path a program uses,
 * and the errors as Vault answers them. Signatures are checked with node:crypto from the public
 * keys the key read shows, not by the service's own verify alone.
 */
import { createRequire } from 'node:module';
import {
  constants,
  createPublicKey,
  createVerify,
  verify as verifySignature,
  type JsonWebKey,
} from 'node:crypto';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { api } from '../../../support/auth.ts';
import { transitTenant, vault, type TransitTenant } from './support.ts';

const require = createRequire(import.meta.url);
const nodeVault = require('node-vault') as (config: Record<string, unknown>) => any;

const b64 = (s: string) => Buffer.from(s).toString('base64');
const text = (b: string) => Buffer.from(b, 'base64').toString('utf8');

/** The status and Vault message of a failed node-vault call. */
async function failure(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as { message: string; response?: { statusCode: number } };
    return { status: e.response?.statusCode ?? 0, message: e.message };
  }
  throw new Error('the call succeeded');
}

describe('Vault Transit API with node-vault', () => {
  let app: TestApp;
  let t: TransitTenant;
  let client: any;

  beforeAll(async () => {
    app = await startTestApp();
    t = await transitTenant(app);
    // LIST is no method Node's HTTP parser takes: node-vault's GET ?list=1 form (Vault takes both).
    client = nodeVault({ apiVersion: 'v1', endpoint: app.url, noCustomHTTPVerbs: true });
    await client.approleLogin({ role_id: t.clientId, secret_id: t.clientSecret });
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('when the workload logs in with AppRole, then its token is a Keyward token of its tenant, not renewable', async () => {
    expect(typeof client.token).toBe('string');
    const self = await client.tokenLookupSelf();
    expect(self.data).toMatchObject({ meta: { tenant_id: t.tenantId }, renewable: false });
    expect(self.data.ttl).toBeGreaterThan(0);
    const renewed = await client.tokenRenewSelf();
    expect(renewed.auth).toMatchObject({ client_token: client.token, renewable: false });
    // The same token works on the native API.
    const native = await api(app, 'GET', '/api/v3/crypto/keys', client.token);
    expect(native.status).toBe(200);
  });

  it('when a key is created, then it encrypts and decrypts single and batch requests, and is listed', async () => {
    await client.write('transit/keys/orders', { type: 'aes256-gcm96' });
    const read = await client.read('transit/keys/orders');
    expect(read.data).toMatchObject({ name: 'orders', type: 'aes256-gcm96', latest_version: 1 });
    expect(Object.keys(read.data.keys)).toEqual(['1']);

    const enc = await client.encryptData({ name: 'orders', plaintext: b64('invoice 42') });
    expect(enc.data.ciphertext).toMatch(/^vault:v1:[A-Za-z0-9+/]+=*$/);
    const dec = await client.decryptData({ name: 'orders', ciphertext: enc.data.ciphertext });
    expect(text(dec.data.plaintext)).toBe('invoice 42');

    const batch = await client.write('transit/encrypt/orders', {
      batch_input: [{ plaintext: b64('a') }, { plaintext: b64('b'), reference: 'second' }],
    });
    expect(batch.data.batch_results).toHaveLength(2);
    expect(batch.data.batch_results[1].reference).toBe('second');
    const opened = await client.write('transit/decrypt/orders', {
      batch_input: batch.data.batch_results.map((r: { ciphertext: string }) => ({
        ciphertext: r.ciphertext,
      })),
    });
    expect(opened.data.batch_results.map((r: { plaintext: string }) => text(r.plaintext))).toEqual([
      'a',
      'b',
    ]);

    const list = await client.list('transit/keys');
    expect(list.data.keys).toContain('orders');
  });

  it('when a derived key is used, then a context is required and only the same context decrypts', async () => {
    await client.write('transit/keys/tenant-data', { type: 'aes256-gcm96', derived: true });
    expect((await client.read('transit/keys/tenant-data')).data.derived).toBe(true);
    const missing = await failure(client.encryptData({ name: 'tenant-data', plaintext: b64('x') }));
    expect(missing.status).toBe(400);
    expect(missing.message).toMatch(/context/);
    const context = b64('customer-7');
    const enc = await client.encryptData({ name: 'tenant-data', plaintext: b64('x'), context });
    const dec = await client.decryptData({
      name: 'tenant-data',
      ciphertext: enc.data.ciphertext,
      context,
    });
    expect(text(dec.data.plaintext)).toBe('x');
    const wrong = await failure(
      client.decryptData({
        name: 'tenant-data',
        ciphertext: enc.data.ciphertext,
        context: b64('customer-8'),
      }),
    );
    expect(wrong).toEqual({ status: 400, message: 'invalid ciphertext: unable to decrypt' });
  });

  it('when the key rotates, then new ciphertexts are v2, v1 still decrypts and rewraps, until min_decryption_version passes it', async () => {
    await client.write('transit/keys/ledger', {});
    const v1 = (await client.encryptData({ name: 'ledger', plaintext: b64('old') })).data
      .ciphertext;
    await client.write('transit/keys/ledger/rotate', {});
    expect((await client.read('transit/keys/ledger')).data.latest_version).toBe(2);
    const v2 = (await client.encryptData({ name: 'ledger', plaintext: b64('new') })).data
      .ciphertext;
    expect(v2).toMatch(/^vault:v2:/);
    expect(
      text((await client.decryptData({ name: 'ledger', ciphertext: v1 })).data.plaintext),
    ).toBe('old');
    const rewrapped = await client.rewrapData({ name: 'ledger', ciphertext: v1 });
    expect(rewrapped.data.ciphertext).toMatch(/^vault:v2:/);
    expect(
      text(
        (await client.decryptData({ name: 'ledger', ciphertext: rewrapped.data.ciphertext })).data
          .plaintext,
      ),
    ).toBe('old');

    await client.write('transit/keys/ledger/config', { min_decryption_version: 2 });
    expect((await client.read('transit/keys/ledger')).data.min_decryption_version).toBe(2);
    const retired = await failure(client.decryptData({ name: 'ledger', ciphertext: v1 }));
    expect(retired.status).toBe(400);
    expect(retired.message).toMatch(/disallowed by policy/);
    await client.write('transit/keys/ledger/config', { min_decryption_version: 1 });
    expect(
      text((await client.decryptData({ name: 'ledger', ciphertext: v1 })).data.plaintext),
    ).toBe('old');
  });

  it('when a data key is asked for, then its plaintext is what its ciphertext decrypts to', async () => {
    const dk = await client.write('transit/datakey/plaintext/orders', { bits: 256 });
    expect(Buffer.from(dk.data.plaintext, 'base64')).toHaveLength(32);
    const dec = await client.decryptData({ name: 'orders', ciphertext: dk.data.ciphertext });
    expect(dec.data.plaintext).toBe(dk.data.plaintext);
    const wrapped = await client.write('transit/datakey/wrapped/orders', {});
    expect(wrapped.data.plaintext).toBeUndefined();
    expect(wrapped.data.ciphertext).toMatch(/^vault:v1:/);
  });

  it('when an hmac key computes an HMAC, then verify accepts it and refuses another input', async () => {
    await client.write('transit/keys/macs', { type: 'hmac' });
    const mac = await client.write('transit/hmac/macs', { input: b64('payload') });
    expect(mac.data.hmac).toMatch(/^vault:v1:/);
    expect(
      (await client.write('transit/verify/macs', { input: b64('payload'), hmac: mac.data.hmac }))
        .data.valid,
    ).toBe(true);
    expect(
      (await client.write('transit/verify/macs', { input: b64('other'), hmac: mac.data.hmac })).data
        .valid,
    ).toBe(false);
  });

  it('when EC and Ed25519 keys sign, then verify accepts the signature and node:crypto verifies it with the public key read', async () => {
    const input = Buffer.from('release 1.2.3');
    await client.write('transit/keys/ec-signer', { type: 'ecdsa-p256' });
    const ec = await client.write('transit/sign/ec-signer', { input: input.toString('base64') });
    expect(
      (
        await client.write('transit/verify/ec-signer', {
          input: input.toString('base64'),
          signature: ec.data.signature,
        })
      ).data.valid,
    ).toBe(true);
    const ecKey = (await client.read('transit/keys/ec-signer')).data.keys['1'];
    const der = Buffer.from(ec.data.signature.split(':')[2], 'base64');
    expect(createVerify('sha256').update(input).verify(ecKey.public_key, der)).toBe(true);

    await client.write('transit/keys/ed-signer', { type: 'ed25519' });
    const ed = await client.write('transit/sign/ed-signer', { input: input.toString('base64') });
    expect(
      (
        await client.write('transit/verify/ed-signer', {
          input: input.toString('base64'),
          signature: ed.data.signature,
        })
      ).data.valid,
    ).toBe(true);
    const edKey = (await client.read('transit/keys/ed-signer')).data.keys['1'];
    const pub = createPublicKey({
      key: {
        kty: 'OKP',
        crv: 'Ed25519',
        x: Buffer.from(edKey.public_key, 'base64').toString('base64url'),
      },
      format: 'jwk',
    });
    expect(
      verifySignature(null, input, pub, Buffer.from(ed.data.signature.split(':')[2], 'base64')),
    ).toBe(true);
    expect(
      (
        await client.write('transit/verify/ed-signer', {
          input: b64('tampered'),
          signature: ed.data.signature,
        })
      ).data.valid,
    ).toBe(false);
  });

  it('when an rsa-2048 key signs with pss and pkcs1v15 over sha2-256, then verify accepts each signature, refuses the other scheme, and node:crypto verifies it with the PEM the key read shows', async () => {
    const input = Buffer.from('release 2.0.0');
    await client.write('transit/keys/rsa-signer', { type: 'rsa-2048' });
    const read = (await client.read('transit/keys/rsa-signer')).data;
    expect(read).toMatchObject({ type: 'rsa-2048', supports_signing: true, derived: false });
    const pem = read.keys['1'].public_key as string;
    expect(pem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    const pub = createPublicKey(pem);
    expect(pub.asymmetricKeyDetails?.modulusLength).toBe(2048);
    const signed: Record<string, string> = {};
    for (const scheme of ['pss', 'pkcs1v15']) {
      const r = await client.write('transit/sign/rsa-signer', {
        input: input.toString('base64'),
        hash_algorithm: 'sha2-256',
        signature_algorithm: scheme,
      });
      expect(r.data.signature).toMatch(/^vault:v1:[A-Za-z0-9+/]+=*$/);
      signed[scheme] = r.data.signature;
      const raw = Buffer.from(r.data.signature.split(':')[2], 'base64');
      expect(raw).toHaveLength(256);
      // A PSS signature verified as Vault's clients do, with the salt length read from it.
      const padding =
        scheme === 'pss'
          ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO }
          : { padding: constants.RSA_PKCS1_PADDING };
      expect(verifySignature('sha256', input, { key: pub, ...padding }, raw)).toBe(true);
      expect(verifySignature('sha256', Buffer.from('x'), { key: pub, ...padding }, raw)).toBe(
        false,
      );
      const valid = async (signature: string, signatureAlgorithm: string, data = input) =>
        (
          await client.write('transit/verify/rsa-signer', {
            input: data.toString('base64'),
            signature,
            hash_algorithm: 'sha2-256',
            signature_algorithm: signatureAlgorithm,
          })
        ).data.valid;
      expect(await valid(r.data.signature, scheme)).toBe(true);
      expect(await valid(r.data.signature, scheme, Buffer.from('tampered'))).toBe(false);
      expect(await valid(r.data.signature, scheme === 'pss' ? 'pkcs1v15' : 'pss')).toBe(false);
    }
    // PKCS#1 v1.5 is deterministic; PSS is salted, so the two never coincide.
    expect(signed.pss).not.toBe(signed.pkcs1v15);
  });

  it('when an ml-dsa key of parameter set 65 signs, then verify accepts the signature, and node:crypto verifies it with the public key the native API publishes', async () => {
    const input = Buffer.from('firmware 7');
    await client.write('transit/keys/pq-signer', { type: 'ml-dsa', parameter_set: '65' });
    const read = (await client.read('transit/keys/pq-signer')).data;
    expect(read).toMatchObject({ type: 'ml-dsa-65', supports_signing: true, latest_version: 1 });
    const r = await client.write('transit/sign/pq-signer', { input: input.toString('base64') });
    expect(r.data.signature).toMatch(/^vault:v1:[A-Za-z0-9+/]+=*$/);
    const raw = Buffer.from(r.data.signature.split(':')[2], 'base64');
    // FIPS 204: an ML-DSA-65 signature is 3309 bytes.
    expect(raw).toHaveLength(3309);
    const valid = async (data: Buffer, signature = r.data.signature) =>
      (
        await client.write('transit/verify/pq-signer', {
          input: data.toString('base64'),
          signature,
        })
      ).data.valid;
    expect(await valid(input)).toBe(true);
    expect(await valid(Buffer.from('firmware 8'))).toBe(false);
    // The key read shows no public key for ML-DSA: the native key read publishes its AKP JWK.
    const native = await api(app, 'GET', '/api/v3/crypto/keys/pq-signer', client.token);
    expect(native.status).toBe(200);
    const jwk = (native.body as { versions: { jwk: Record<string, unknown> }[] }).versions[0].jwk;
    expect(jwk).toMatchObject({ kty: 'AKP', alg: 'ML-DSA-65' });
    const pub = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    expect(pub.asymmetricKeyType).toBe('ml-dsa-65');
    expect(verifySignature(null, input, pub, raw)).toBe(true);
    expect(verifySignature(null, Buffer.from('firmware 8'), pub, raw)).toBe(false);
  });

  it('when random bytes are asked for, then they come in the size and format asked', async () => {
    const r = await client.write('transit/random', { bytes: 16 });
    expect(Buffer.from(r.data.random_bytes, 'base64')).toHaveLength(16);
    const hex = await client.write('transit/random/8', { format: 'hex' });
    expect(hex.data.random_bytes).toMatch(/^[0-9a-f]{16}$/);
  });

  it("when the requests are wrong, then Vault's errors come back: unknown key, bad ciphertext, revoked key, no token", async () => {
    expect(await failure(client.encryptData({ name: 'nope', plaintext: b64('x') }))).toEqual({
      status: 400,
      message: 'encryption key not found',
    });
    expect(
      await failure(
        client.decryptData({ name: 'orders', ciphertext: 'vault:v1:bm90IGEgY2lwaGVydGV4dA==' }),
      ),
    ).toEqual({
      status: 400,
      message: 'invalid ciphertext: unable to decrypt',
    });
    expect((await failure(client.read('transit/keys/nope'))).status).toBe(404);
    await client.write('transit/keys/doomed', {});
    const revoked = await api(
      app,
      'POST',
      `/api/v3/admin/tenants/${t.tenantId}/keys/doomed/revoke`,
      t.admin,
      {},
    );
    expect(revoked.status).toBe(200);
    const refused = await failure(client.encryptData({ name: 'doomed', plaintext: b64('x') }));
    expect(refused.status).toBe(400);
    expect(refused.message).toMatch(/revoked/);
    const anonymous = nodeVault({ apiVersion: 'v1', endpoint: app.url, token: 'not-a-token' });
    expect(await failure(anonymous.encryptData({ name: 'orders', plaintext: b64('x') }))).toEqual({
      status: 403,
      message: 'permission denied',
    });
  });

  it("when another tenant's ciphertext, a tampered one and a wrong context are decrypted, then all three answer the same status and body", async () => {
    const other = await transitTenant(app);
    await vault(app, 'POST', 'transit/keys/orders', other.token, {});
    await vault(app, 'POST', 'transit/keys/orders-ctx', t.token, { derived: true });
    const theirs = await vault(app, 'POST', 'transit/encrypt/orders', other.token, {
      plaintext: b64('theirs'),
    });
    const mine = (await client.encryptData({ name: 'orders', plaintext: b64('mine') })).data
      .ciphertext as string;
    const ctx = await vault(app, 'POST', 'transit/encrypt/orders-ctx', t.token, {
      plaintext: b64('c'),
      context: b64('a'),
    });
    const blob = Buffer.from(mine.split(':')[2], 'base64');
    blob[blob.length - 3] ^= 1;
    const answers = [
      await vault(app, 'POST', 'transit/decrypt/orders', t.token, {
        ciphertext: theirs.body.data.ciphertext,
      }),
      await vault(app, 'POST', 'transit/decrypt/orders', t.token, {
        ciphertext: `vault:v1:${blob.toString('base64')}`,
      }),
      await vault(app, 'POST', 'transit/decrypt/orders-ctx', t.token, {
        ciphertext: ctx.body.data.ciphertext,
        context: b64('b'),
      }),
    ];
    for (const a of answers)
      expect(a).toEqual({
        status: 400,
        body: { errors: ['invalid ciphertext: unable to decrypt'] },
      });
    // The other tenant's token may not act in this tenant by naming it as the namespace.
    const ns = await vault(
      app,
      'POST',
      'transit/decrypt/orders',
      other.token,
      { ciphertext: mine },
      { 'X-Vault-Namespace': t.tenantId },
    );
    expect(ns).toEqual({ status: 403, body: { errors: ['permission denied'] } });
  });
});
