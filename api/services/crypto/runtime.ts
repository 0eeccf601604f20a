/**
 * Runtime cryptography: encrypt, decrypt, encapsulate, decapsulate by kid within the token's
 * tenant, and the helpers every runtime operation shares (the key lookup, placement, the key
 * version); sign and verify are signing.ts. Keys come from the in-process cache (no database round
 * trip); each operation runs on the event loop or in the pool as placement.ts decides.
 */
import type { AppContext } from '../../context.ts';
import { AppError, problem } from '../../../shared/errors/index.ts';
import { assertUsage, type KeyUsage } from '../../../shared/crypto/registry.ts';
import {
  contextDigest,
  decryptParsed,
  encryptCompact,
  encryptParts,
  parseCompact,
} from '../../../shared/jose/compact-jwe.ts';
import { blobBase64, blobOf } from '../../../shared/jose/ciphertext-blob.ts';
import { decapsulate, encapsulate } from '../../../shared/crypto/pqc.ts';
import type { LoadedKeyVersion } from '../../../shared/crypto/material.ts';
import type { CachedKey } from '../../../shared/keys/cache.ts';
import { decodeBase64 } from '../../../shared/base64.ts';
import { retainedVersion } from '../../../shared/keys/lifecycle.ts';
import { usableKey } from '../../../shared/keys/lookup.ts';
import { runsInPool, type RuntimeOp } from './placement.ts';
import { noteKeyType, runtimeCaller } from './batch.ts';
import type { DecryptingCaller } from '../../../shared/keys/decryption-budget.ts';
import {
  MAX_CONTEXT_MEMBERS,
  type DecapsulateBody,
  type DecryptBody,
  type EncapsulateBody,
  type EncryptBody,
} from './bodies.ts';

/** A base64 (or base64url) request member as bytes; 400 naming the field otherwise. */
export const b64 = (s: string, field: string): Buffer => {
  const bytes = decodeBase64(s, 'any');
  if (!bytes) throw problem('validation_failed', `${field} must be a base64 string`);
  return bytes;
};
export const u8 = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/**
 * The key a runtime operation runs with: shared/keys' usableKey (the one lookup), its type noted
 * for the operation's metrics label.
 */
export async function operationKey(
  ctx: AppContext,
  tenantId: string,
  kid: unknown,
): Promise<CachedKey> {
  const key = await usableKey(ctx.keys, tenantId, kid);
  noteKeyType(key.type);
  return key;
}

export function versionOf(key: CachedKey, version: number): LoadedKeyVersion {
  const v = key.versions.get(version);
  if (!v) throw problem('decryption_failed', 'decryption failed');
  return v;
}

export function poolArg(key: CachedKey, version: number, usage: KeyUsage) {
  return { material: key.material.get(version)!, kid: key.kid, version, usage };
}

const MAX_CONTEXT_BYTES = 8192;

/**
 * An encryption context (AWS KMS EncryptionContext): an object of at most 64 string members,
 * 8 KiB of keys and values in all. Checked here, not only by the body size cap, so the bound holds
 * whatever JSON_LIMIT_BYTES is. Returns its digest for the JWE header (undefined: none).
 */
export function encryptionContext(
  ctx: AppContext,
  value: unknown,
  field = 'context',
): string | undefined {
  if (value === undefined) return undefined;
  const bad = (why: string) =>
    problem('validation_failed', `${field} ${why}`, { details: { field } });
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw bad('must be an object of string members');
  const names = Object.keys(value);
  if (names.length > MAX_CONTEXT_MEMBERS)
    throw bad(`has ${names.length} members; at most ${MAX_CONTEXT_MEMBERS}`);
  let bytes = 0;
  for (const name of names) {
    const v = (value as Record<string, unknown>)[name];
    if (typeof v !== 'string') throw bad(`member ${name.slice(0, 40)} must be a string`);
    bytes += Buffer.byteLength(name) + Buffer.byteLength(v);
    if (bytes > MAX_CONTEXT_BYTES) throw bad(`is larger than ${MAX_CONTEXT_BYTES} bytes`);
  }
  return contextDigest(value as Record<string, string>, ctx.contextKey);
}

export async function place<T>(
  op: RuntimeOp,
  key: CachedKey,
  digest: boolean,
  local: () => T,
  remote: () => Promise<T>,
): Promise<T> {
  return runsInPool(op, key.type, digest) ? remote() : local();
}

/** Awaits a decryption, counting a decryption-failed against the caller's budget on the key. */
async function opening<T>(
  ctx: AppContext,
  caller: DecryptingCaller | null,
  kid: string,
  decryption: Promise<T>,
): Promise<T> {
  try {
    return await decryption;
  } catch (err) {
    if (caller && err instanceof AppError && err.code === 'decryption_failed')
      await ctx.decryption.failed(caller, kid, 'runtime').catch(() => {});
    throw err;
  }
}

/**
 * Encrypts to the key's current version, binding the context digest: `{kid, version, ciphertext}`,
 * the ciphertext a compact JWE, or for `blob` the base64 of its ciphertext blob (what the AWS KMS
 * and Vault Transit APIs carry), written from the sealer's bytes without a base64url pass.
 */
export async function seal(
  ctx: AppContext,
  key: CachedKey,
  data: Buffer,
  context: string | undefined,
  form: 'compact' | 'blob' = 'compact',
) {
  assertUsage(key, 'encrypt');
  const v = key.currentVersion;
  const ciphertext = await place(
    'encrypt',
    key,
    false,
    () =>
      form === 'blob'
        ? blobOf(encryptParts(versionOf(key, v), data, { context })).toString('base64')
        : encryptCompact(versionOf(key, v), data, { context }),
    async () => {
      const { jwe } = await ctx.pool.run<{ jwe: string }>('encryptCompactWithKey', {
        ...poolArg(key, v, 'encrypt'),
        plaintext: data,
        context,
      });
      return form === 'blob' ? blobBase64(jwe) : jwe;
    },
  );
  return { kid: key.kid, version: v, ciphertext };
}

/**
 * Opens a compact JWE of the tenant with the version its header names, if still retained
 * (key-version-retired below minDecryptionVersion) and only under the same context digest.
 */
export async function unseal(
  ctx: AppContext,
  tenantId: string,
  ciphertext: string,
  context: string | undefined,
): Promise<{ key: CachedKey; version: number; plaintext: Buffer }> {
  const parsed = parseCompact(ciphertext);
  const key = await operationKey(ctx, tenantId, parsed.kid);
  assertUsage(key, 'encrypt');
  const loaded = retainedVersion(key, parsed.version);
  // The decryption-failure budget of the caller on this key: checked before, counted after.
  const caller = runtimeCaller();
  if (caller) await ctx.decryption.admit(caller, key.kid);
  const plaintext = await opening(
    ctx,
    caller,
    key.kid,
    place(
      'decrypt',
      key,
      false,
      () => decryptParsed(parsed, loaded, context),
      async () =>
        u8(
          (
            await ctx.pool.run<{ plaintext: Uint8Array }>('decryptCompactWithKey', {
              ...poolArg(key, parsed.version, 'encrypt'),
              jwe: ciphertext,
              context,
            })
          ).plaintext,
        ),
    ),
  );
  return { key, version: parsed.version, plaintext };
}

/** `{kid, data, context?}` → `{kid, version, ciphertext}` (compact JWE naming `<kid>#<version>`). */
export async function encrypt(ctx: AppContext, tenantId: string, body: EncryptBody) {
  const context = encryptionContext(ctx, body.context);
  const data = b64(body.data, 'data');
  return seal(ctx, await operationKey(ctx, tenantId, body.kid), data, context);
}

/** `{ciphertext, context?}` → `{kid, version, data}`; any retained version decrypts, with the context it was sealed under. */
export async function decrypt(ctx: AppContext, tenantId: string, body: DecryptBody) {
  const { key, version, plaintext } = await unseal(
    ctx,
    tenantId,
    body.ciphertext,
    encryptionContext(ctx, body.context),
  );
  return { kid: key.kid, version, data: plaintext.toString('base64') };
}

/** `{kid}` → `{kid, version, ciphertext, sharedSecret}` (ML-KEM or a hybrid). */
export async function encapsulateKey(ctx: AppContext, tenantId: string, body: EncapsulateBody) {
  const key = await operationKey(ctx, tenantId, body.kid);
  assertUsage(key, 'encrypt');
  const v = key.currentVersion;
  const r = await place(
    'encapsulate',
    key,
    false,
    () => encapsulate(versionOf(key, v)),
    async () => {
      const out = await ctx.pool.run<{ ciphertext: Uint8Array; sharedSecret: Uint8Array }>(
        'encapsulateWithKey',
        poolArg(key, v, 'encrypt'),
      );
      return { ciphertext: u8(out.ciphertext), sharedSecret: u8(out.sharedSecret) };
    },
  );
  return {
    kid: key.kid,
    version: v,
    ciphertext: Buffer.from(r.ciphertext).toString('base64'),
    sharedSecret: Buffer.from(r.sharedSecret).toString('base64'),
  };
}

/** `{kid, ciphertext, version?}` → `{sharedSecret}`. */
export async function decapsulateKey(ctx: AppContext, tenantId: string, body: DecapsulateBody) {
  const key = await operationKey(ctx, tenantId, body.kid);
  assertUsage(key, 'encrypt');
  const v = body.version ?? key.currentVersion;
  if (!key.versions.has(v))
    throw problem('validation_failed', `key ${key.kid} has no version ${v}`);
  // A retired version no longer decapsulates, like decrypt (the key's minDecryptionVersion).
  retainedVersion(key, v);
  const ct = b64(body.ciphertext, 'ciphertext');
  const secret = await place(
    'decapsulate',
    key,
    false,
    () => decapsulate(versionOf(key, v), ct),
    async () =>
      u8(
        (
          await ctx.pool.run<{ sharedSecret: Uint8Array }>('decapsulateWithKey', {
            ...poolArg(key, v, 'encrypt'),
            ciphertext: ct,
          })
        ).sharedSecret,
      ),
  );
  return { kid: key.kid, version: v, sharedSecret: Buffer.from(secret).toString('base64') };
}
