/**
 * Key material at rest: AES-256-GCM under a key of the master keyring, with the
 * tenant, kid and version as additional authenticated data, so a sealed blob moved to another
 * row, tenant or version fails to open.
 * Layouts:
 * - v2: 0x02 | id length (1) | id (ASCII) | iv (12) | ciphertext | tag (16); the AAD also holds
 *   the id. Every blob sealed since the keyring names the key it was sealed under, so a rewrap
 *   knows what is left and a start knows which ids the database still needs.
 * - v1 (before the keyring): 0x01 | iv (12) | ciphertext | tag (16), under the one key there was;
 *   it opens under whichever key of the keyring is that key, until a rewrap turns it into v2.
 */
import { createCipheriv, createDecipheriv, randomBytes, createHmac } from 'node:crypto';
import { asSecretKey } from './secret-key.ts';
import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { AppError, problem } from '../errors/index.ts';
import { parseKeyring, type KeyringEntry } from './keyring.ts';

const FORMAT_V1 = 0x01;
const FORMAT_V2 = 0x02;

/** Sealed material that does not open under this master key (wrong key, or tampered row). */
export class IntegrityError extends AppError {
  constructor(cause: unknown) {
    super('internal', 'key material failed its integrity check', { cause });
  }
}

/** Sealed material naming a key id the keyring does not hold (removed too early). */
export class UnknownKeyIdError extends IntegrityError {
  readonly keyId: string;
  constructor(keyId: string) {
    super(new Error(`sealed under master key id "${keyId}", which is not in the keyring`));
    this.keyId = keyId;
  }
}

/** Where the sealed material belongs; every field is authenticated. */
export interface SealContext {
  tenantId: string;
  kid: string;
  version: number;
}

/** Seals under the newest key of the keyring and opens under any of its keys. */
export interface MasterKey {
  /** The keyring's ids, newest first. */
  readonly ids: readonly string[];
  /** The id new material is sealed under. */
  readonly newestId: string;
  seal(plaintext: Buffer, ctx: SealContext): Buffer;
  open(sealed: Buffer, ctx: SealContext): Buffer;
  /** Opens and says which key did it (for a v1 blob, the key of the keyring that opened it). */
  openWithId(sealed: Buffer, ctx: SealContext): { plaintext: Buffer; id: string };
  /**
   * A purpose-bound subkey (HMAC-SHA-256 of the label) under the key `id`. Only for creating the
   * sealed master secrets once (api/services/master-key/secrets.ts): everything else reads
   * those, so that they outlive the key they were first derived from.
   */
  derive(label: string, id: string): Buffer;
}

/** The id a blob names: a string for v2, null for a v1 blob (sealed before the keyring). */
export function sealedBy(sealed: Buffer): string | null {
  if (sealed.length > 2 && sealed[0] === FORMAT_V2)
    return sealed.subarray(2, 2 + sealed[1]).toString('latin1');
  return null;
}

/** The bytes every blob sealed under `id` starts with (what a rewrap's query compares). */
export function sealHeader(id: string): Buffer {
  const raw = Buffer.from(id, 'latin1');
  return Buffer.concat([Buffer.of(FORMAT_V2, raw.length), raw]);
}

function aad(ctx: SealContext, id?: string): Buffer {
  return Buffer.from(
    id === undefined
      ? `keyward:v1:${ctx.tenantId}:${ctx.kid}:${ctx.version}`
      : `keyward:v2:${id}:${ctx.tenantId}:${ctx.kid}:${ctx.version}`,
    'utf8',
  );
}

function gcmOpen(secret: Buffer, iv: Buffer, body: Buffer, tag: Buffer, ad: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', asSecretKey(secret), iv);
  decipher.setAAD(ad);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(body), decipher.final()]);
}

/** Wraps 32 raw bytes as a keyring of one key (tests, tools); its id is the fingerprint id. */
export function createMasterKey(key: Buffer): MasterKey {
  return createKeyring(parseKeyring(key.toString('base64'), 'master key'));
}

/** Wraps the parsed keyring (newest first). */
export function createKeyring(entries: readonly KeyringEntry[]): MasterKey {
  if (entries.length === 0) throw new Error('the master keyring is empty');
  for (const e of entries) if (e.key.length !== 32) throw new Error('master key must be 32 bytes');
  const keys = new Map(entries.map((e) => [e.id, Buffer.from(e.key)]));
  const newestId = entries[0].id;
  const newest = keys.get(newestId)!;
  const header = sealHeader(newestId);
  // A v1 blob is tried oldest first: the key it was sealed under is usually the oldest one kept.
  const oldestFirst = [...entries].reverse().map((e) => e.id);
  return {
    ids: Object.freeze(entries.map((e) => e.id)),
    newestId,
    seal(plaintext, ctx) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', asSecretKey(newest), iv);
      cipher.setAAD(aad(ctx, newestId));
      const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return Buffer.concat([header, iv, body, cipher.getAuthTag()]);
    },
    open(sealed, ctx) {
      return this.openWithId(sealed, ctx).plaintext;
    },
    openWithId(sealed, ctx) {
      if (sealed.length >= 29 && sealed[0] === FORMAT_V1) {
        const iv = sealed.subarray(1, 13);
        const body = sealed.subarray(13, sealed.length - 16);
        const tag = sealed.subarray(sealed.length - 16);
        let last: unknown;
        for (const id of oldestFirst) {
          try {
            return { plaintext: gcmOpen(keys.get(id)!, iv, body, tag, aad(ctx)), id };
          } catch (cause) {
            last = cause;
          }
        }
        throw new IntegrityError(last);
      }
      const id = sealedBy(sealed);
      if (id === null || sealed.length < 2 + sealed[1] + 28)
        throw problem('internal', 'sealed key material has an unknown format');
      const secret = keys.get(id);
      if (!secret) throw new UnknownKeyIdError(id);
      const at = 2 + sealed[1];
      try {
        const plaintext = gcmOpen(
          secret,
          sealed.subarray(at, at + 12),
          sealed.subarray(at + 12, sealed.length - 16),
          sealed.subarray(sealed.length - 16),
          aad(ctx, id),
        );
        return { plaintext, id };
      } catch (cause) {
        throw new IntegrityError(cause);
      }
    },
    derive(label, id) {
      const secret = keys.get(id);
      if (!secret) throw new UnknownKeyIdError(id);
      return createHmac('sha256', secret).update(`keyward-derive:${label}`).digest();
    },
  };
}

/**
 * Loads the master keyring: KEYWARD_MASTER_KEY (or its _FILE) when configured, else
 * DATA_DIR/master.key (same text form), generated once with one key and mode 0600. `generated`
 * tells the caller to warn that production must set it; a generated key is written by `persist`,
 * which the caller runs once the database proved to be new (a restored database started without
 * its keyring must not leave a stray key file behind).
 */
export function loadMasterKey(
  configured: readonly KeyringEntry[] | undefined,
  dataDir: string,
): { key: MasterKey; generated: boolean; path?: string; persist?: () => void } {
  if (configured) return { key: createKeyring(configured), generated: false };
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'master.key');
  if (existsSync(path)) {
    return {
      key: createKeyring(parseKeyring(readFileSync(path, 'utf8'), path)),
      generated: false,
      path,
    };
  }
  const raw = randomBytes(32);
  const persist = () => {
    writeFileSync(path, raw.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
    chmodSync(path, 0o600);
  };
  return { key: createMasterKey(raw), generated: true, path, persist };
}
