/**
 * A migration manifest signed through the service's own key lookup: the tenant's archive signing
 * key (a generated EC key made the archive key through the Admin API) found by the tenant's key
 * resolver, and the manifest checked with the JWK Set the Admin API publishes for that key, by
 * jose and by the manifest's verifier. Before the key is the archive key, nothing is signed.
 */
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { JsonWebKey } from 'node:crypto';
import { tenantKeyResolver } from '../../../shared/keys/cms-resolver.ts';
import { archiveManifestSigner, buildManifest } from '../../../shared/manifest/manifest.ts';
import { MANIFEST_TYP } from '../../../shared/manifest/payload.ts';
import { verifyManifestSignature } from '../../../shared/manifest/verify.ts';
import type { LedgerRow } from '../../../shared/manifest/row.ts';
import { makeActor, startTestApp, type Actor, type TestApp } from './helpers.ts';

let app: TestApp;
let actor: Actor;

async function admin(method: string, path: string, body?: object) {
  const r = await fetch(`${app.url}/api/v3/admin/tenants/${actor.tenant.tenantId}/keys${path}`, {
    method,
    headers: { authorization: `Bearer ${actor.user}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

const rows: LedgerRow[] = [
  {
    sourceKey: 'mail/0001.p7m',
    inputSize: 2048,
    inputSha256: 'ab'.repeat(32),
    form: 'signed-then-enveloped',
    outcome: 'converted',
    outputs: [{ key: 'out/mail/0001.p7m.jwe', size: 2500, sha256: 'cd'.repeat(32) }],
    keys: [{ kid: 'mail-key', version: 1 }],
    signers: ['ef'.repeat(32)],
    attempts: 1,
  },
];
async function* stream<T>(items: T[]): AsyncGenerator<T> {
  for (const x of items) yield x;
}
const params = () => ({
  migration: 'c0ffee00-0000-4000-8000-000000000001',
  tenant: actor.tenant.tenantId,
  parameters: { source: 'mail/', outputPrefix: 'out/', targets: ['mail-key'], signer: null },
});

beforeAll(async () => {
  app = await startTestApp();
  actor = await makeActor(app, [
    'admin.keys.create',
    'admin.keys.update',
    'admin.keys.read',
    'admin.keys.export-public',
  ]);
});

afterAll(async () => {
  await app.stop();
});

it('when the tenant has no archive signing key, then its resolver gives no manifest signer', async () => {
  await expect(
    archiveManifestSigner(tenantKeyResolver(app.ctx, actor.tenant.tenantId, null)),
  ).rejects.toMatchObject({ code: 'unprocessable' });
});

it('when a signing key is made the archive key, then the manifest it signs verifies with the JWK Set the Admin API publishes', async () => {
  const created = await admin('POST', '', {
    type: 'ec-p256',
    usage: 'sign',
    kid: 'archive-signing',
  });
  expect(created.status).toBe(201);
  const patched = await admin('PATCH', '/archive-signing', { archiveSigning: true });
  expect(patched.body).toMatchObject({ archiveSigning: true });

  const signer = await archiveManifestSigner(
    tenantKeyResolver(app.ctx, actor.tenant.tenantId, null),
  );
  const { jws, root } = await buildManifest(stream(rows), params(), signer);

  const published = await admin('GET', '/archive-signing/public');
  expect(published.status).toBe(200);
  const jwks = {
    keys: (published.body.versions as Array<{ jwk: JsonWebKey }>).map((v) => v.jwk),
  };
  expect(jwks.keys.map((k) => k.kid)).toEqual(['archive-signing#1']);
  const { payload, protectedHeader } = await jwtVerify(jws, createLocalJWKSet(jwks as never), {
    typ: MANIFEST_TYP,
  });
  expect(protectedHeader).toEqual({ alg: 'ES256', kid: 'archive-signing#1', typ: MANIFEST_TYP });
  expect(payload).toMatchObject({
    tenant: actor.tenant.tenantId,
    kid: 'archive-signing#1',
    tree: { size: 1, root },
  });
  expect(verifyManifestSignature(jws, jwks)).toMatchObject({ tree: { root } });
});
