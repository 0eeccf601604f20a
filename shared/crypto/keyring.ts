/**
 * The master keyring's text form (KEYWARD_MASTER_KEY, its _FILE, DATA_DIR/master.key): entries
 * separated by commas or white space, newest first, each `id:base64` or a bare `base64`. A bare
 * key's id is `k-` and the first 8 hex digits of its SHA-256, so a single key written as before
 * keeps working and has a stable id that the status endpoint can name. Kept free of imports from
 * the rest of the project so the config schema can parse with it.
 */
import { createHash } from 'node:crypto';

/** One key of the keyring. */
export interface KeyringEntry {
  readonly id: string;
  readonly key: Buffer;
}

/** What an id may be: short, printable, unambiguous in the text form and in a blob header. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9_.-]{1,32}$/;

/** The id a bare key gets: stable for the key, printable, and not a secret. */
export function fingerprintId(key: Buffer): string {
  return `k-${createHash('sha256').update(key).digest('hex').slice(0, 8)}`;
}

/**
 * Parses the keyring text; throws an Error naming `source` (the variable or the file) when an
 * entry is not 32 bytes of base64, an id is malformed, or an id or a key appears twice.
 */
export function parseKeyring(text: string, source: string): KeyringEntry[] {
  const parts = text.split(/[\s,]+/).filter((p) => p !== '');
  if (parts.length === 0) throw new Error(`${source} holds no key`);
  const entries: KeyringEntry[] = [];
  for (const [i, part] of parts.entries()) {
    const colon = part.indexOf(':');
    const b64 = colon < 0 ? part : part.slice(colon + 1);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64))
      throw new Error(`${source}: entry ${i + 1} is not base64 (write id:base64, newest first)`);
    const key = Buffer.from(b64, 'base64');
    if (key.length !== 32)
      throw new Error(
        `${source} must be base64 of exactly 32 bytes per key (entry ${i + 1} has ${key.length} bytes)`,
      );
    const id = colon < 0 ? fingerprintId(key) : part.slice(0, colon);
    if (!KEY_ID_PATTERN.test(id))
      throw new Error(`${source}: key id "${id}" must be 1 to 32 of A-Z a-z 0-9 _ . -`);
    if (entries.some((e) => e.id === id))
      throw new Error(`${source}: key id "${id}" appears twice`);
    if (entries.some((e) => e.key.equals(key)))
      throw new Error(`${source}: the key of "${id}" appears twice under two ids`);
    entries.push({ id, key });
  }
  return entries;
}
