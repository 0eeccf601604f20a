/**
 * Key material at rest (contract 3): AES-256-GCM under the master key, with the tenant, kid and
 * version as additional authenticated data, so a sealed blob moved to another row, tenant or
 * version fails to open.
 * Layout: 0x01 | iv (12) | ciphertext | tag (16).
 */
import { createCipheriv, createDecipheriv, randomBytes, createHmac } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { AppError, problem } from '../errors/index.ts';

const FORMAT_V1 = 0x01;

/** Sealed material that does not open under this master key (wrong key, or tampered row). */
export class IntegrityError extends AppError {
  constructor(cause: unknown) {
    super('internal', 'key material failed its integrity check', { cause });
  }
}

/** Where the sealed material belongs; every field is authenticated. */
export interface SealContext {
  tenantId: string;
  kid: string;
  version: number;
}

/** Seals and opens key material under one master key. */
export interface MasterKey {
  seal(plaintext: Buffer, ctx: SealContext): Buffer;
  open(sealed: Buffer, ctx: SealContext): Buffer;
  /** A purpose-bound subkey (HMAC-SHA-256 of the label), e.g. the client-secret pepper. */
  derive(label: string): Buffer;
}

function aad(ctx: SealContext): Buffer {
  return Buffer.from(`keyward:v1:${ctx.tenantId}:${ctx.kid}:${ctx.version}`, 'utf8');
}

/** Wraps 32 raw bytes as a MasterKey. */
export function createMasterKey(key: Buffer): MasterKey {
  if (key.length !== 32) throw new Error('master key must be 32 bytes');
  const secret = Buffer.from(key);
  return {
    seal(plaintext, ctx) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', secret, iv);
      cipher.setAAD(aad(ctx));
      const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return Buffer.concat([Buffer.of(FORMAT_V1), iv, body, cipher.getAuthTag()]);
    },
    open(sealed, ctx) {
      if (sealed.length < 29 || sealed[0] !== FORMAT_V1)
        throw problem('internal', 'sealed key material has an unknown format');
      const decipher = createDecipheriv('aes-256-gcm', secret, sealed.subarray(1, 13));
      decipher.setAAD(aad(ctx));
      decipher.setAuthTag(sealed.subarray(sealed.length - 16));
      try {
        return Buffer.concat([
          decipher.update(sealed.subarray(13, sealed.length - 16)),
          decipher.final(),
        ]);
      } catch (cause) {
        throw new IntegrityError(cause);
      }
    },
    derive(label) {
      return createHmac('sha256', secret).update(`keyward-derive:${label}`).digest();
    },
  };
}

/**
 * Loads the master key: KEYWARD_MASTER_KEY when configured, else DATA_DIR/master.key, generated
 * once with mode 0600. `generated` tells the caller to warn that production must set it.
 */
export function loadMasterKey(
  configured: Buffer | undefined,
  dataDir: string,
): { key: MasterKey; generated: boolean; path?: string } {
  if (configured) return { key: createMasterKey(configured), generated: false };
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'master.key');
  if (existsSync(path)) {
    const raw = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
    return { key: createMasterKey(raw), generated: false, path };
  }
  const raw = randomBytes(32);
  writeFileSync(path, raw.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return { key: createMasterKey(raw), generated: true, path };
}
