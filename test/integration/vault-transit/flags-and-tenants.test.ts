/**
 * What the Vault Transit API keeps to itself and to its tenant:
 * - a key's Transit flags (`derived`, `deletion_allowed`) are the key's own, not tags: the AWS
 *   KMS API of the same tenant neither lists them (ListResourceTags) nor changes them with a tag
 *   of the former name (TagResource / UntagResource);
 * - a token of one tenant naming another as X-Vault-Namespace is refused, byte for byte alike
 *   whether that tenant exists, and another tenant's ciphertext answers exactly what a tampered
 *   one answers.
 */
import { randomBytes } from 'node:crypto';
import {
  KMSClient,
  ListResourceTagsCommand,
  TagResourceCommand,
  UntagResourceCommand,
} from '@aws-sdk/client-kms';
import { startTestApp, type TestApp } from '../../../support/app.ts';
import { AWS_PERMISSIONS, awsTenant, type AwsTenant } from '../aws-kms/support.ts';
import { TRANSIT_PERMISSIONS, transitTenant, vault, type TransitTenant } from './support.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** One Vault answer as its bytes: status, Content-Type and the body text unparsed. */
async function raw(
  app: TestApp,
  method: string,
  path: string,
  token: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${app.url}/v1/${path}`, {
    method,
    headers: { 'X-Vault-Token': token, 'X-Vault-Request': 'true', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

const MISSING_CONTEXT = {
  status: 400,
  body: {
    errors: [
      "missing 'context' for key derivation; the key was created using a derived key, which means additional, per-request information must be included in order to perform operations with the key",
    ],
  },
};

describe('Vault Transit flags beside the AWS KMS API, and tenants apart', () => {
  let app: TestApp;
  let aws: AwsTenant;
  let t: TransitTenant;
  let kms: KMSClient;

  beforeAll(async () => {
    app = await startTestApp();
    // One tenant whose workload holds both a Transit token and an AWS access key.
    aws = await awsTenant(app, [...new Set([...AWS_PERMISSIONS, ...TRANSIT_PERMISSIONS])]);
    const login = await vault(app, 'POST', 'auth/approle/login', undefined, {
      role_id: aws.clientId,
      secret_id: aws.clientSecret,
    });
    expect(login.status).toBe(200);
    t = { ...aws, token: login.body.auth.client_token as string };
    kms = new KMSClient({
      endpoint: app.url,
      region: 'eu-west-1',
      credentials: { accessKeyId: aws.accessKeyId, secretAccessKey: aws.secretAccessKey },
      maxAttempts: 1,
    });
  });
  afterAll(async () => {
    kms?.destroy();
    await app?.stop();
  });

  it('when a derived key is made through Transit and given deletion_allowed, then AWS ListResourceTags shows no Transit flag, and AWS tags of their former names change neither', async () => {
    expect(
      (await vault(app, 'POST', 'transit/keys/derived', t.token, { derived: true })).status,
    ).toBe(204);
    expect(
      (await vault(app, 'POST', 'transit/keys/derived/config', t.token, { deletion_allowed: true }))
        .body.data,
    ).toMatchObject({ derived: true, deletion_allowed: true });
    const listed = await kms.send(new ListResourceTagsCommand({ KeyId: 'derived' }));
    expect(listed.Tags ?? []).toEqual([]);

    // Tags of the names the flags once had are plain AWS tags now.
    await kms.send(
      new TagResourceCommand({
        KeyId: 'derived',
        Tags: [
          { TagKey: 'vault-transit:derived', TagValue: 'false' },
          { TagKey: 'vault-transit:deletion-allowed', TagValue: 'false' },
        ],
      }),
    );
    expect(
      await vault(app, 'POST', 'transit/encrypt/derived', t.token, { plaintext: b64('x') }),
    ).toEqual(MISSING_CONTEXT);
    expect((await vault(app, 'GET', 'transit/keys/derived', t.token)).body.data).toMatchObject({
      derived: true,
      deletion_allowed: true,
    });
    await kms.send(
      new UntagResourceCommand({
        KeyId: 'derived',
        TagKeys: ['vault-transit:derived', 'vault-transit:deletion-allowed'],
      }),
    );
    expect(
      await vault(app, 'POST', 'transit/encrypt/derived', t.token, { plaintext: b64('x') }),
    ).toEqual(MISSING_CONTEXT);
    const context = b64('customer-1');
    const enc = await vault(app, 'POST', 'transit/encrypt/derived', t.token, {
      plaintext: b64('x'),
      context,
    });
    expect(enc.status).toBe(200);
    expect(
      (
        await vault(app, 'POST', 'transit/decrypt/derived', t.token, {
          ciphertext: enc.body.data.ciphertext,
        })
      ).body,
    ).toEqual(MISSING_CONTEXT.body);

    // A key that is not derived does not become derived by a tag either.
    await vault(app, 'POST', 'transit/keys/plain', t.token, {});
    await kms.send(
      new TagResourceCommand({
        KeyId: 'plain',
        Tags: [{ TagKey: 'vault-transit:derived', TagValue: 'true' }],
      }),
    );
    expect(
      (await vault(app, 'POST', 'transit/encrypt/plain', t.token, { plaintext: b64('x') })).status,
    ).toBe(200);
    expect((await vault(app, 'GET', 'transit/keys/plain', t.token)).body.data.derived).toBe(false);
  });

  it('when deletion_allowed is configured false and true again, then DELETE follows the key setting alone, whatever AWS tags say', async () => {
    await vault(app, 'POST', 'transit/keys/doomed', t.token, {});
    await kms.send(
      new TagResourceCommand({
        KeyId: 'doomed',
        Tags: [{ TagKey: 'vault-transit:deletion-allowed', TagValue: 'true' }],
      }),
    );
    expect(await vault(app, 'DELETE', 'transit/keys/doomed', t.token)).toEqual({
      status: 400,
      body: { errors: ['deletion is not allowed for this key'] },
    });
    const set = async (allowed: boolean) =>
      (
        await vault(app, 'POST', 'transit/keys/doomed/config', t.token, {
          deletion_allowed: allowed,
        })
      ).body.data.deletion_allowed;
    // Each change is a key change of the change feed, which every instance applies.
    const changes = async () =>
      Number(
        (
          await app.ctx
            .db('change_log')
            .where({ kind: 'key', ref: `${t.tenantId}:doomed` })
            .count({ n: '*' })
            .first()
        )?.n,
      );
    const before = await changes();
    expect(await set(true)).toBe(true);
    expect(await set(false)).toBe(false);
    expect(await changes()).toBe(before + 2);
    expect((await vault(app, 'DELETE', 'transit/keys/doomed', t.token)).status).toBe(400);
    expect(await set(true)).toBe(true);
    expect((await vault(app, 'DELETE', 'transit/keys/doomed', t.token)).status).toBe(204);
    expect((await vault(app, 'GET', 'transit/keys/doomed', t.token)).status).toBe(404);
  });

  it("when a tenant's token names another tenant as X-Vault-Namespace, then every path answers 403 permission denied, the same bytes as for a tenant that does not exist", async () => {
    const other = await transitTenant(app);
    await vault(app, 'POST', 'transit/keys/shared-name', other.token, {});
    await vault(app, 'POST', 'transit/keys/shared-name', t.token, {});
    const denied = { status: 403, body: { errors: ['permission denied'] } };
    const calls: Array<[string, string, unknown]> = [
      ['POST', 'transit/encrypt/shared-name', { plaintext: b64('x') }],
      ['POST', 'transit/decrypt/shared-name', { ciphertext: 'vault:v1:AAAA' }],
      ['GET', 'transit/keys/shared-name', undefined],
      ['POST', 'transit/keys/new-in-other', {}],
    ];
    const answers = new Set<string>();
    for (const ns of [
      other.tenantId,
      other.tenantId.toUpperCase(),
      `/${other.tenantId}/`,
      '00000000-0000-4000-8000-000000000000',
    ])
      for (const [method, path, body] of calls) {
        const r = await raw(app, method, path, t.token, body, { 'X-Vault-Namespace': ns });
        expect({ ns, path, status: r.status, body: JSON.parse(r.text) }).toEqual({
          ns,
          path,
          ...denied,
        });
        answers.add(`${r.status} ${r.type} ${r.text}`);
      }
    expect(answers.size).toBe(1);
    // Nothing was created in the other tenant.
    expect((await vault(app, 'GET', 'transit/keys/new-in-other', other.token)).status).toBe(404);
  });

  it("when a ciphertext made under one tenant's key is decrypted with another tenant's token and a key of the same name, then the answer is byte for byte the tampered ciphertext's", async () => {
    const other = await transitTenant(app);
    await vault(app, 'POST', 'transit/keys/same', t.token, {});
    await vault(app, 'POST', 'transit/keys/same', other.token, {});
    const plaintext = randomBytes(24).toString('base64');
    const mine = (await vault(app, 'POST', 'transit/encrypt/same', t.token, { plaintext })).body
      .data.ciphertext as string;
    const [prefix, version, payload] = mine.split(':');
    const blob = Buffer.from(payload, 'base64');
    blob[blob.length - 3] ^= 1;
    const tampered = `${prefix}:${version}:${blob.toString('base64')}`;

    const theirs = await raw(app, 'POST', 'transit/decrypt/same', other.token, {
      ciphertext: mine,
    });
    const tamperedHere = await raw(app, 'POST', 'transit/decrypt/same', t.token, {
      ciphertext: tampered,
    });
    const tamperedThere = await raw(app, 'POST', 'transit/decrypt/same', other.token, {
      ciphertext: tampered,
    });
    expect(tamperedHere.status).toBe(400);
    expect(JSON.parse(tamperedHere.text)).toEqual({
      errors: ['invalid ciphertext: unable to decrypt'],
    });
    expect(theirs).toEqual(tamperedHere);
    expect(tamperedThere).toEqual(tamperedHere);
    // The ciphertext itself was sound: its own tenant opens it.
    expect(
      (await vault(app, 'POST', 'transit/decrypt/same', t.token, { ciphertext: mine })).body.data
        .plaintext,
    ).toBe(plaintext);
  });
});
