/**
 * The key cache of a process (the API's and the worker's alike): a key's versions are opened from
 * the database once and kept as KeyObjects, so encrypt/decrypt/sign/verify and conversions do no
 * database round trip. Changes (rotation, suspension, revocation) invalidate the entry on every
 * instance through the change feed (shared/fanout/change-feed.ts): at once over Redis, within a
 * poll period when a message is lost.
 *
 * Every lookup by kid passes here, so the identifier rules live here once: the tenant id is taken
 * in its canonical form (a UUID in lower case, shared/ids.ts) and a kid that no key can have is
 * not found without a database read.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { MasterKey } from '../crypto/master-key.ts';
import {
  deserializeMaterial,
  loadKeyVersion,
  serializeMaterial,
  type KeyMaterial,
  type LoadedKeyVersion,
} from '../crypto/material.ts';
import type { KeyType, KeyUsage } from '../crypto/registry.ts';
import { AppError, problem } from '../errors/index.ts';
import type { Logger } from '../logger.ts';
import { KID, canonicalId } from '../ids.ts';
import { keyNotFound, type KeyState } from './lifecycle.ts';
import { enabledUsages } from './usages.ts';
import { splitTenantRef, tenantRef, type ChangeFeed } from '../fanout/change-feed.ts';
import { ChangeFedCache } from '../fanout/change-fed-cache.ts';
import { Key, KeyVersion } from '../db/models/keys.ts';

const MAX_ENTRIES = 10_000;
const NEGATIVE_TTL_MS = 1_000;
/**
 * How long a lookup by something other than a kid is recalled (see KeyCache.recall): a key
 * created meanwhile writes no change, so a remembered answer may miss it for this long, the same
 * window as a kid found missing.
 */
export const LOOKUP_TTL_MS = 1_000;

/** One key as the hot path sees it. */
export interface CachedKey {
  tenantId: string;
  kid: string;
  type: KeyType;
  /** The key's one usage (what names only one); `usages` are the enabled ones, which every check consults. */
  usage: KeyUsage;
  usages: readonly KeyUsage[];
  state: KeyState;
  /** When a pending deletion destroys the key (it is suspended meanwhile), else null. */
  deletionAt: Date | null;
  currentVersion: number;
  /** Versions below this no longer decrypt or verify (as Vault min_decryption_version); kept. */
  minDecryptionVersion: number;
  /** Vault Transit `derived`: every encrypt and decrypt names a context (docs/vault-transit.md). */
  transitDerived: boolean;
  versions: Map<number, LoadedKeyVersion>;
  /** Serialized material per version, for tasks sent to the worker pool. */
  material: Map<number, Uint8Array>;
  /**
   * The certificate (DER, the chain's leaf) per version that has one, for the CMS resolver. A
   * version's chain is written once with the version, so it is as current as the entry.
   */
  certificates: Map<number, Buffer>;
}

/** Who a stored version belongs to, for the log line when its material is refused. */
export interface StoredVersionId {
  tenantId: string;
  kid: string;
  version: number;
  usage: KeyUsage;
  usages?: readonly KeyUsage[];
}

/**
 * Loads a stored version as the hot path uses it. Material the load checks refuse although it was
 * stored (an RSA key with e = 1 or 3 imported before the exponent rule) is logged with what an
 * operator needs to act (tenant, kid, version, why) and answered as an internal error: the
 * caller did nothing wrong, and the key must not serve.
 */
export function loadStoredVersion(
  m: KeyMaterial,
  id: StoredVersionId,
  log?: Pick<Logger, 'error'>,
): LoadedKeyVersion {
  try {
    return loadKeyVersion(m, id);
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'keystore_key_invalid') throw err;
    log?.error(
      { tenantId: id.tenantId, kid: id.kid, version: id.version, why: err.message },
      'stored key material refused at load; revoke this key version and import a sound key',
    );
    throw problem(
      'internal',
      `key ${id.kid} version ${id.version} of tenant ${id.tenantId} is refused at load: ${err.message}`,
      { cause: err },
    );
  }
}

/**
 * The key cache of a process, with its cross-instance invalidation; `log` receives refused stored
 * material.
 */
export class KeyCache {
  readonly #db: Knex;
  readonly #master: MasterKey;
  readonly #feed: ChangeFeed;
  readonly #log: Pick<Logger, 'error'> | undefined;
  /**
   * By the key change's ref, `<tenantId>:<kid>` (tenant ids are canonical here: the seal binding
   * and the change refs use the lower-case form).
   */
  readonly #entries: ChangeFedCache<CachedKey>;
  /** Lookups by other identifiers, per tenant: question -> answer and when it was asked. */
  readonly #recalled = new Map<string, Map<string, { at: number; answer: Promise<unknown> }>>();
  #recalledCount = 0;

  constructor(db: Knex, master: MasterKey, feed: ChangeFeed, log?: Pick<Logger, 'error'>) {
    this.#db = db;
    this.#master = master;
    this.#feed = feed;
    this.#log = log;
    this.#entries = new ChangeFedCache<CachedKey>({
      feed,
      kind: 'key',
      max: MAX_ENTRIES,
      // A kid found missing is answered so for a moment without a read: random kids cost one each.
      absentTtlMs: NEGATIVE_TTL_MS,
      load: async ([ref]) => {
        const { tenantId, name: kid } = splitTenantRef(ref);
        try {
          return new Map([[ref, await this.#load(tenantId, kid)]]);
        } catch (err) {
          if (err instanceof AppError && err.code === 'key_not_found') return new Map();
          throw err;
        }
      },
    });
    feed.on('key', (c) => this.#forget(splitTenantRef(c.ref).tenantId));
    feed.onResync(() => {
      this.#recalled.clear();
      this.#recalledCount = 0;
    });
  }

  /** The key, loaded once; key-not-found when the tenant has no such kid. */
  get(anyTenantId: string, kid: string): Promise<CachedKey> {
    // One rule for every caller: an upper-case tenant id named another cache entry (never
    // invalidated by the lower-case change ref) and failed the seal binding of the material.
    const tenantId = canonicalId(anyTenantId);
    if (!KID.test(kid)) return Promise.reject(keyNotFound(kid));
    const ref = tenantRef(tenantId, kid);
    return (
      this.#entries.hit(ref) ??
      this.#entries.get(ref).then((key) => key ?? Promise.reject(keyNotFound(kid)))
    );
  }

  /** Drops a key here and on every other instance. */
  async invalidate(anyTenantId: string, kid: string): Promise<void> {
    const ref = tenantRef(canonicalId(anyTenantId), kid);
    this.#entries.forget(ref);
    await this.#feed.record('key', ref);
  }

  /**
   * Writes the key's change inside `trx`, so it commits with the key's new state (no window where
   * the state is committed and the change is not); call the returned function after the commit.
   */
  async changedIn(trx: Knex, anyTenantId: string, kid: string): Promise<() => void> {
    const change = await this.#feed.write(trx, 'key', tenantRef(canonicalId(anyTenantId), kid));
    return () => this.#feed.announce(change);
  }

  /**
   * A lookup of a tenant's keys by something other than a kid (the kid and version a CMS
   * identifier names, the archive signing key), remembered for LOOKUP_TTL_MS and forgotten at
   * once when any key of the tenant changes (creating one included), so a message stream does not
   * ask the database the same question for every message, whether it found a key or none. `what`
   * names the question within the tenant and is kept as its SHA-256 only: it holds identifiers a
   * message chose, of any length. A lookup that failed is not kept.
   */
  recall<T>(anyTenantId: string, what: string, load: () => Promise<T>): Promise<T> {
    const tenantId = canonicalId(anyTenantId);
    const question = createHash('sha256').update(what).digest('base64url');
    const recalled = this.#recalled;
    let questions = recalled.get(tenantId);
    const hit = questions?.get(question);
    if (hit && Date.now() - hit.at < LOOKUP_TTL_MS) return hit.answer as Promise<T>;
    // Bounded like the entries: many tenants or questions start the memo afresh.
    if (this.#recalledCount >= MAX_ENTRIES) {
      recalled.clear();
      this.#recalledCount = 0;
    }
    if (!questions) recalled.set(tenantId, (questions = new Map()));
    if (!hit) this.#recalledCount++;
    const answer = load();
    const entry = { at: Date.now(), answer };
    questions.set(question, entry);
    answer.catch(() => {
      const current = recalled.get(tenantId);
      if (current?.get(question) === entry) {
        current.delete(question);
        this.#recalledCount--;
      }
    });
    return answer;
  }

  #forget(tenantId: string): void {
    this.#recalledCount -= this.#recalled.get(tenantId)?.size ?? 0;
    this.#recalled.delete(tenantId);
  }

  async #load(tenantId: string, kid: string): Promise<CachedKey> {
    const row = await Key.query(this.#db).findOne({ tenant_id: tenantId, kid });
    if (!row) throw keyNotFound(kid);
    const rows = await KeyVersion.query(this.#db)
      .where({ key_id: row.id })
      .select('version', 'material', 'certificate_chain');
    const versions = new Map<number, LoadedKeyVersion>();
    const material = new Map<number, Uint8Array>();
    const certificates = new Map<number, Buffer>();
    const usages = enabledUsages(row as unknown as Record<string, unknown>);
    for (const v of rows) {
      const opened = this.#master.open(v.material, { tenantId, kid, version: v.version });
      const m = deserializeMaterial(opened);
      versions.set(
        v.version,
        loadStoredVersion(
          m,
          { tenantId, kid, version: v.version, usage: row.usage as KeyUsage, usages },
          this.#log,
        ),
      );
      material.set(v.version, serializeMaterial(m));
      const leaf = v.certificate_chain?.[0];
      if (leaf) certificates.set(v.version, Buffer.from(leaf, 'base64'));
    }
    return {
      tenantId,
      kid,
      type: row.type as KeyType,
      usage: row.usage as KeyUsage,
      usages,
      state: row.state,
      deletionAt: row.deletion_at ? new Date(row.deletion_at) : null,
      currentVersion: row.current_version,
      minDecryptionVersion: row.min_decryption_version ?? 1,
      transitDerived: row.transit_derived === true,
      versions,
      material,
      certificates,
    };
  }
}
