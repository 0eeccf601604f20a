/**
 * hvac (Debian's python3-hvac), the Vault client of Python programs, against Keyward's Vault
 * Transit API: the script hvac_client.py logs in with AppRole and drives every Transit path hvac
 * wraps; this test checks what it printed, and the revoked-key answer it cannot cause itself.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { transitTenant, vault, type TransitTenant } from './support.ts';

const run = promisify(execFile);

describe('Vault Transit API with hvac', () => {
  let app: TestApp;
  let t: TransitTenant;
  let other: TransitTenant;

  beforeAll(async () => {
    app = await startTestApp();
    t = await transitTenant(app);
    other = await transitTenant(app);
  });
  afterAll(async () => {
    await app?.stop();
  });

  it('when hvac creates keys, encrypts, rotates, rewraps, signs, HMACs and meets the errors, then each answer is what Vault gives', async () => {
    // Another tenant's ciphertext, made under a key of the same name.
    await vault(app, 'POST', 'transit/keys/orders', other.token, {});
    const theirs = await vault(app, 'POST', 'transit/encrypt/orders', other.token, {
      plaintext: Buffer.from('theirs').toString('base64'),
    });
    const script = fileURLToPath(new URL('./hvac_client.py', import.meta.url));
    const { stdout } = await run(
      '/usr/bin/python3',
      [script, app.url, t.clientId, t.clientSecret, 'not-a-token', theirs.body.data.ciphertext],
      { env: { PATH: process.env.PATH, NO_PROXY: '127.0.0.1,localhost' }, timeout: 120_000 },
    );
    const invalid = ['InvalidRequest', ['invalid ciphertext: unable to decrypt']];
    expect(JSON.parse(stdout)).toEqual({
      lookup: { renewable: false, type: 'service' },
      key: ['aes256-gcm96', 1, ['1']],
      decrypted: 'invoice 42',
      batch: ['a', 'b'],
      listed: true,
      derived: 'x',
      derived_no_context: 'InvalidRequest',
      derived_wrong_context: invalid,
      latest: 2,
      v2: 'v2',
      old_decrypts: 'invoice 42',
      rewrapped: ['v2', 'invoice 42'],
      retired: [
        'InvalidRequest',
        ['ciphertext or signature version is disallowed by policy (too old)'],
      ],
      datakey: [32, true, false],
      hmac: [true, false],
      ec: true,
      ed: [true, false],
      random: 24,
      hash: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      unknown_key: ['InvalidRequest', ['encryption key not found']],
      unknown_read: 'InvalidPath',
      bad_ciphertext: invalid,
      wrong_tenant: invalid,
      unsupported_type: [
        'InvalidRequest',
        [
          expect.stringMatching(
            /^unknown key type: chacha20-poly1305; this service holds aes256-gcm96/,
          ),
        ],
      ],
      delete_refused: ['InvalidRequest', ['deletion is not allowed for this key']],
      deleted: 'InvalidPath',
      invalid_token: ['Forbidden', ['permission denied']],
    });
  }, 180_000);

  it('when the key is revoked natively, then hvac gets 400 naming the state, as for every other API', async () => {
    await vault(app, 'POST', 'transit/keys/revoked', t.token, {});
    const r = await fetch(`${app.url}/api/v3/admin/tenants/${t.tenantId}/keys/revoked/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.admin}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(r.status).toBe(200);
    const script = `
import hvac, sys
from hvac import exceptions
c = hvac.Client(url=sys.argv[1], token=sys.argv[2])
try:
    c.secrets.transit.encrypt_data(name="revoked", plaintext="eA==")
except exceptions.InvalidRequest as e:
    print(e.errors[0])
`;
    const { stdout } = await run('/usr/bin/python3', ['-c', script, app.url, t.token], {
      env: { PATH: process.env.PATH, NO_PROXY: '127.0.0.1,localhost' },
    });
    expect(stdout.trim()).toMatch(/^key revoked is revoked/);
  });
});
