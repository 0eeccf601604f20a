/**
 * Token signing keys: ES256, private halves sealed under the master key. The
 * newest key signs; retired keys stay in the JWKS until every token they signed has expired.
 * Rotation happens on a schedule and on demand, and reaches every other instance through the
 * change feed (they reload, so they stop signing with the retired key); an instance also reloads
 * when it meets an unknown kid (at most once a second).
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomUUID,
  type KeyObject,
} from 'node:crypto';
import type { Knex } from 'knex';
import { IntegrityError, type MasterKey } from '../../../shared/crypto/master-key.ts';
import { ConfigError } from '../../../shared/config/index.ts';
import { SigningKey } from '../../../shared/db/models/tokens.ts';
import { SIGNING_KEYS_SEAL_TENANT } from '../../../shared/keys/sealed-items.ts';
import type { ChangeFeed } from '../../../shared/fanout/change-feed.ts';

const ALG = 'ES256';
const SEAL_TENANT = SIGNING_KEYS_SEAL_TENANT;

interface LoadedKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicJwk: Record<string, unknown>;
  createdAt: Date;
  publishUntil: Date | null;
}

export interface SigningKeys {
  /** The key that signs new tokens. */
  current(): LoadedKey;
  /** A published key by kid, reloading from the database once if unknown. */
  publicKey(kid: string): Promise<KeyObject | null>;
  /** A published key by kid from memory only (the hot path). */
  publicKeySync(kid: string): KeyObject | null;
  jwks(): { keys: Array<Record<string, unknown>> };
  /** Adds a new signing key and retires the current one. */
  rotate(maxTokenLifetimeSeconds: number): Promise<string>;
  /** Rotates when the current key is older than `maxAgeSeconds`. */
  rotateIfDue(maxAgeSeconds: number, maxTokenLifetimeSeconds: number): Promise<boolean>;
  reload(): Promise<void>;
}

/** Loads the signing keys, creating the first one when there is none. */
export async function createSigningKeys(
  db: Knex,
  master: MasterKey,
  feed: ChangeFeed,
): Promise<SigningKeys> {
  let keys: LoadedKey[] = [];
  let lastReload = 0;

  async function insertNew(): Promise<string> {
    const kid = `sig-${randomUUID()}`;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const der = privateKey.export({ format: 'der', type: 'pkcs8' });
    const jwk = { ...publicKey.export({ format: 'jwk' }), kid, alg: ALG, use: 'sig' };
    await SigningKey.query(db).insert({
      kid,
      alg: ALG,
      private_material: master.seal(der, { tenantId: SEAL_TENANT, kid, version: 1 }),
      public_jwk: jwk,
    });
    return kid;
  }

  async function reload(): Promise<void> {
    lastReload = Date.now();
    const rows = await SigningKey.query(db)
      .where((q) => q.whereNull('publish_until').orWhere('publish_until', '>', new Date()))
      .orderBy('created_at', 'asc');
    keys = rows.map((r) => {
      const privateKey = createPrivateKey({
        key: master.open(r.private_material, { tenantId: SEAL_TENANT, kid: r.kid, version: 1 }),
        format: 'der',
        type: 'pkcs8',
      });
      return {
        kid: r.kid,
        privateKey,
        publicKey: createPublicKey(privateKey),
        publicJwk: r.public_jwk,
        createdAt: new Date(r.created_at),
        publishUntil: r.publish_until ? new Date(r.publish_until) : null,
      };
    });
  }

  try {
    await reload();
  } catch (err) {
    // The first material opened at start: failing here means the master key is not this database's.
    if (err instanceof IntegrityError) {
      throw new ConfigError(
        'KEYWARD_MASTER_KEY does not open the key material in this database: most likely it is not the master key the database was first started with (KEYWARD_MASTER_KEY then, or DATA_DIR/master.key when none was set); otherwise the signing_keys rows were altered',
      );
    }
    throw err;
  }
  if (!keys.some((k) => k.publishUntil === null)) {
    await insertNew();
    await reload();
  }

  const reloadQuietly = () => {
    reload().catch(() => {
      // The database is away: keep the keys we have; the next change or resync reloads.
    });
  };
  feed.on('signing-keys', reloadQuietly);
  feed.onResync(reload);

  const api: SigningKeys = {
    current() {
      const active = keys.filter((k) => k.publishUntil === null);
      return active[active.length - 1] ?? keys[keys.length - 1];
    },
    publicKeySync(kid) {
      return keys.find((k) => k.kid === kid)?.publicKey ?? null;
    },
    async publicKey(kid) {
      const found = api.publicKeySync(kid);
      if (found || Date.now() - lastReload < 1000) return found;
      await reload();
      return api.publicKeySync(kid);
    },
    jwks() {
      const now = Date.now();
      return {
        keys: keys
          .filter((k) => !k.publishUntil || k.publishUntil.getTime() > now)
          .map((k) => k.publicJwk),
      };
    },
    async rotate(maxTokenLifetimeSeconds) {
      const kid = await insertNew();
      // Retire every other active key: it stops signing now and stays published until the last
      // token it could have signed has expired.
      await SigningKey.query(db)
        .whereNull('publish_until')
        .whereNot({ kid })
        .patch({
          retired_at: new Date(),
          publish_until: new Date(Date.now() + maxTokenLifetimeSeconds * 1000),
        });
      await reload();
      await feed.record('signing-keys', kid);
      return kid;
    },
    async rotateIfDue(maxAgeSeconds, maxTokenLifetimeSeconds) {
      await reload();
      const cur = api.current();
      if (Date.now() - cur.createdAt.getTime() < maxAgeSeconds * 1000) return false;
      await api.rotate(maxTokenLifetimeSeconds);
      return true;
    },
    reload,
  };
  return api;
}
