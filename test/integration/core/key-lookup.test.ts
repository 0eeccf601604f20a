/**
 * The one key lookup (shared/keys), as the API and the worker use it: the tenant id in any case
 * spelling names one key, one cache entry and one change ref; a kid no key can have is not found
 * everywhere; a usable key is active and of the asked usage; listings filter by state and type;
 * the CMS resolver answers a key the cache holds without SQL. Built from shared/ alone, by the
 * key plane both processes open (shared/key-plane.ts).
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { createTestDatabase, TEST_ENGINE, type TestDatabase } from '../../../support/database.ts';
import type { Db } from '../../../shared/db/knex.ts';
import type { MasterKey } from '../../../shared/crypto/master-key.ts';
import { generateKeyMaterial, serializeMaterial } from '../../../shared/crypto/material.ts';
import { PQC_KEY_TYPES, type KeyType } from '../../../shared/crypto/registry.ts';
import { createLogger } from '../../../shared/logger.ts';
import { loadConfig } from '../../../shared/config/index.ts';
import { openKeyPlane, type KeyPlane } from '../../../shared/key-plane.ts';
import type { KeyCache } from '../../../shared/keys/cache.ts';
import type { KeyState } from '../../../shared/keys/lifecycle.ts';
import { tenantKeyResolver } from '../../../shared/keys/cms-resolver.ts';
import { publicKeysOf } from '../../../api/services/keys/public-view.ts';
import {
  findKeyRow,
  issuerSerialKey,
  keyRow,
  keysQuery,
  usableKey,
} from '../../../shared/keys/lookup.ts';

const logger = createLogger(
  'warn',
  new Writable({
    write(_c, _e, cb) {
      cb();
    },
  }),
);
let database: TestDatabase;
let plane: KeyPlane;
let db: Db;
let master: MasterKey;
let keys: KeyCache;
let tenantId: string;
/** The resolver hands the certificate over as stored; no parser reads it on this path. */
const CERTIFICATE = Buffer.from('a stand-in for a DER certificate');

/** What a promise rejected with (its code), or 'resolved'. */
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (err: { code?: string }) => err.code,
  );

/**
 * Stores a key with version 1 sealed as the key store seals it (bound to the canonical tenant id),
 * with `certificate` as its chain's leaf when given; in the test's tenant unless `owner` is given.
 */
async function addKey(
  kid: string,
  type: KeyType,
  usage: string,
  { state = 'active', certificate, owner = tenantId }: AddedKey = {},
): Promise<void> {
  const id = randomUUID();
  await db('keys').insert({
    id,
    tenant_id: owner,
    kid,
    type,
    usage,
    state,
    current_version: 1,
    source: 'generated',
  });
  const material = master.seal(serializeMaterial(await generateKeyMaterial(type)), {
    tenantId: owner,
    kid,
    version: 1,
  });
  await db('key_versions').insert({
    id: randomUUID(),
    key_id: id,
    version: 1,
    material,
    certificate_chain: certificate ? JSON.stringify([certificate.toString('base64')]) : null,
  });
}

interface AddedKey {
  state?: KeyState;
  certificate?: Buffer;
  owner?: string;
}

/** The SQL statements `run` sent to the database. */
async function queriesOf(run: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const count = (q: { sql: string }) => sent.push(q.sql);
  db.on('query', count);
  try {
    await run();
  } finally {
    db.off('query', count);
  }
  return sent;
}

/** Changes a key's state as the key store does: the change commits with it and reaches every cache. */
async function setState(anyTenantId: string, kid: string, state: KeyState): Promise<void> {
  const announce = await db.transaction(async (trx) => {
    await trx('keys').where({ tenant_id: tenantId, kid }).update({ state });
    return keys.changedIn(trx, anyTenantId, kid);
  });
  announce();
}

beforeAll(async () => {
  database = await createTestDatabase();
  const config = loadConfig({
    ...(database.url ? { DATABASE_URL: database.url } : {}),
    KEYWARD_MASTER_KEY: Buffer.alloc(32, 9).toString('base64'),
  });
  plane = await openKeyPlane(config, {
    logger,
    embedded: 'memory',
    connectRedis: async () => undefined,
  });
  ({ db, masterKey: master, keys } = plane);
  plane.changes.start();
  tenantId = randomUUID();
  await db('tenants').insert({ id: tenantId, name: `t-${tenantId.slice(0, 8)}` });
  await addKey('enc-1', 'aes-256', 'encrypt');
  await addKey('sig-1', 'ec-p256', 'sign');
  await addKey('kem-1', 'ml-kem-768', 'encrypt');
  await addKey('gone-1', 'aes-256', 'encrypt', { state: 'archived' });
});

afterAll(async () => {
  const closing = plane.closers.close();
  // As BullMQ's Worker.close(): a second close answers the first call's promise.
  expect(plane.closers.close()).toBe(closing);
  await closing;
  await database.drop();
});

describe(`one key lookup for the API and the worker (${TEST_ENGINE})`, () => {
  it('when the tenant id is spelled in upper case, then the cache answers the same key (it opened the material under the wrong binding and kept a second entry no change reached)', async () => {
    const upper = tenantId.toUpperCase();
    const key = await keys.get(upper, 'enc-1');
    expect(key).toBe(await keys.get(tenantId, 'enc-1'));
    expect(key.tenantId).toBe(tenantId);
    await setState(tenantId, 'enc-1', 'suspended');
    expect((await keys.get(upper, 'enc-1')).state).toBe('suspended');
    await setState(upper, 'enc-1', 'active');
    expect((await keys.get(tenantId, 'enc-1')).state).toBe('active');
  });

  it("when the CMS resolver is built for an upper-case tenant id, then it resolves the tenant's keys as for the canonical one", async () => {
    const resolved = await tenantKeyResolver({ db, keys }, tenantId.toUpperCase(), null).byKid(
      'sig-1',
      'sign',
    );
    expect(resolved).toMatchObject({ kid: 'sig-1', version: 1, type: 'ec-p256' });
  });

  it('when a kid no key can have is looked up, then every path answers not found without reading the database (the resolver answers null, the runtime a 400 naming kid)', async () => {
    const bad = 'no such#kid';
    expect(await codeOf(keys.get(tenantId, bad))).toBe('key_not_found');
    expect(await codeOf(publicKeysOf({ keys }, tenantId, bad, { runtime: true }))).toBe(
      'key_not_found',
    );
    expect(await codeOf(keyRow(db, tenantId, bad))).toBe('key_not_found');
    expect(await findKeyRow(db, tenantId, bad)).toBeNull();
    expect(await tenantKeyResolver({ db, keys }, tenantId, null).byKid(bad, 'encrypt')).toBeNull();
    expect(await codeOf(usableKey(keys, tenantId, bad))).toBe('validation_failed');
    expect(await codeOf(usableKey(keys, tenantId, 42))).toBe('validation_failed');
  });

  it('when a usable key is asked for a use, then it must be active and of that usage', async () => {
    expect((await usableKey(keys, tenantId, 'enc-1', 'encrypt')).kid).toBe('enc-1');
    expect(await codeOf(usableKey(keys, tenantId, 'enc-1', 'sign'))).toBe('key_usage_mismatch');
    expect(await codeOf(usableKey(keys, tenantId, 'gone-1'))).toBe('key_revoked');
    expect(await codeOf(usableKey(keys, tenantId, 'missing-1'))).toBe('key_not_found');
    expect(
      await codeOf(tenantKeyResolver({ db, keys }, tenantId, null).byKid('gone-1', 'encrypt')),
    ).toBe('key_revoked');
  });

  it('when keys are listed, then the filter picks states and type families, and the tenant id may be in any case', async () => {
    const kids = async (q: ReturnType<typeof keysQuery>) =>
      (await q.orderBy('kid').select('kid')).map((r: { kid: string }) => r.kid);
    expect(await kids(keysQuery(db, tenantId))).toEqual(['enc-1', 'gone-1', 'kem-1', 'sig-1']);
    expect(
      await kids(keysQuery(db, tenantId.toUpperCase(), { exceptStates: ['archived'] })),
    ).toEqual(['enc-1', 'kem-1', 'sig-1']);
    expect(await kids(keysQuery(db, tenantId, { states: ['archived'] }))).toEqual(['gone-1']);
    expect(
      await kids(
        keysQuery(db, tenantId, {
          states: ['active', 'suspended'],
          types: PQC_KEY_TYPES,
        }),
      ),
    ).toEqual(['kem-1']);
  });

  it('when the CMS resolver asks for a key the cache holds, then it answers key and certificate without SQL; a change of the key reads it again', async () => {
    const owner = randomUUID();
    await db('tenants').insert({ id: owner, name: `t-${owner.slice(0, 8)}` });
    await addKey('cert-1', 'ec-p256', 'sign', { certificate: CERTIFICATE, owner });
    const resolver = tenantKeyResolver({ db, keys }, owner, null);
    const first = await resolver.byKid('cert-1', 'sign');
    expect(first).toMatchObject({ kid: 'cert-1', version: 1, certificate: CERTIFICATE });
    let hit;
    expect(
      await queriesOf(async () => {
        hit = await resolver.byKid('cert-1', 'sign');
      }),
    ).toEqual([]);
    expect(hit).toMatchObject({ kid: 'cert-1', version: 1, certificate: CERTIFICATE });
    expect(hit!.privateKey).toBe(first!.privateKey);
    await keys.invalidate(owner, 'cert-1');
    const reread = await queriesOf(() => resolver.byKid('cert-1', 'sign'));
    expect(reread.length).toBeGreaterThan(0);
  });

  it('when the CMS resolver finds a key by issuer and serial again, or found none a moment ago, then it asks no SQL; a change of a tenant key asks again', async () => {
    const owner = randomUUID();
    await db('tenants').insert({ id: owner, name: `t-${owner.slice(0, 8)}` });
    await addKey('ref-1', 'ec-p256', 'sign', { certificate: CERTIFICATE, owner });
    const issuer = Buffer.from('3012311030 stand-in issuer');
    const serial = Buffer.from([1, 2, 3]);
    await db('key_versions')
      .whereIn('key_id', db('keys').select('id').where({ tenant_id: owner, kid: 'ref-1' }))
      .update({ issuer_serial: issuerSerialKey(issuer, serial) });
    const resolver = tenantKeyResolver({ db, keys }, owner, null);
    const ref = { issuer, serialNumber: serial };
    expect(await resolver.byCmsRef(ref, 'sign')).toMatchObject({ kid: 'ref-1', version: 1 });
    expect(await queriesOf(() => resolver.byCmsRef(ref, 'sign'))).toEqual([]);
    // Nothing found is remembered as well (a mailbox names people whose keys are elsewhere in
    // every message); a key created later is a change of the tenant's keys, which forgets it.
    const other = { issuer, serialNumber: Buffer.from([9]) };
    expect(await resolver.byCmsRef(other, 'sign')).toBeNull();
    expect(await queriesOf(() => resolver.byCmsRef(other, 'sign'))).toEqual([]);
    // The tenant has no archive signing key: asked once, then remembered until a key changes.
    expect(await resolver.archiveSigningKey!()).toBeNull();
    expect(await queriesOf(() => resolver.archiveSigningKey!())).toEqual([]);
    const announce = await db.transaction(async (trx) => {
      await trx('keys').where({ tenant_id: owner, kid: 'ref-1' }).update({ state: 'suspended' });
      return keys.changedIn(trx, owner, 'ref-1');
    });
    announce();
    const after = await queriesOf(async () => {
      expect(await codeOf(resolver.byCmsRef(ref, 'sign'))).toBe('key_suspended');
    });
    expect(after.some((q) => q.includes('issuer_serial'))).toBe(true);
    expect((await queriesOf(() => resolver.byCmsRef(other, 'sign'))).length).toBeGreaterThan(0);
    expect((await queriesOf(() => resolver.archiveSigningKey!())).length).toBeGreaterThan(0);
  });
});
