/**
 * KMS operations beyond encrypt and decrypt: data keys for envelope encryption
 * (AWS KMS GenerateDataKey), re-encryption without the plaintext leaving the service (AWS
 * ReEncrypt, Vault rewrap) and random bytes from the service's CSPRNG. They reuse the runtime's
 * seal and unseal, so the JWE, the context binding and the version rules are the same.
 */
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { assertUsage } from '../../../shared/crypto/registry.ts';
import { encryptionContext, seal, unseal, operationKey } from './runtime.ts';
import type { DataKeyBody, RandomBody, ReEncryptBody } from './bodies.ts';

/** The bytes of each keySpec (the body schema admits only these; a Map: keySpec is request input). */
const KEY_BYTES: ReadonlyMap<string, number> = new Map<DataKeyBody['keySpec'], number>([
  ['AES_256', 32],
  ['AES_128', 16],
]);

/** A fresh data key and the same key sealed under kid; the plaintext buffer is wiped once encoded. */
async function dataKey(ctx: AppContext, tenantId: string, body: DataKeyBody) {
  const size = KEY_BYTES.get(body.keySpec);
  if (size === undefined) throw new Error(`keySpec ${body.keySpec} has no size`);
  const context = encryptionContext(ctx, body.context);
  const key = await operationKey(ctx, tenantId, body.kid);
  assertUsage(key, 'encrypt');
  const plaintext = randomBytes(size);
  try {
    const sealed = await seal(ctx, key, plaintext, context);
    return {
      kid: sealed.kid,
      version: sealed.version,
      plaintext: plaintext.toString('base64'),
      ciphertext: sealed.ciphertext,
    };
  } finally {
    plaintext.fill(0);
  }
}

/** `{kid, keySpec, context?}` → `{kid, version, plaintext, ciphertext}`; /decrypt with the same context opens ciphertext. */
export async function generateDataKey(ctx: AppContext, tenantId: string, body: DataKeyBody) {
  return dataKey(ctx, tenantId, body);
}

/** As generateDataKey, without `plaintext`: for a component that stores the wrapped key for another to open later. */
export async function generateDataKeyWithoutPlaintext(
  ctx: AppContext,
  tenantId: string,
  body: DataKeyBody,
) {
  const { plaintext: _dropped, ...rest } = await dataKey(ctx, tenantId, body);
  return rest;
}

/**
 * `{ciphertext, context?, targetKid?, targetContext?}` → `{kid, version, ciphertext, sourceKid, sourceVersion}`.
 * The target defaults to the source key's current version (rewrap after rotation) and the target
 * context to the source context, so a rewrap never drops a binding silently. The target is checked
 * before anything is decrypted.
 */
export async function reEncrypt(ctx: AppContext, tenantId: string, body: ReEncryptBody) {
  const sourceContext = encryptionContext(ctx, body.context);
  const targetContext =
    body.targetContext === undefined
      ? sourceContext
      : encryptionContext(ctx, body.targetContext, 'targetContext');
  const target =
    body.targetKid === undefined ? undefined : await operationKey(ctx, tenantId, body.targetKid);
  if (target) assertUsage(target, 'encrypt');
  const source = await unseal(ctx, tenantId, body.ciphertext, sourceContext);
  try {
    const sealed = await seal(ctx, target ?? source.key, source.plaintext, targetContext);
    return { ...sealed, sourceKid: source.key.kid, sourceVersion: source.version };
  } finally {
    source.plaintext.fill(0);
  }
}

/** `{bytes}` (an integer, 1 to 1024) → `{data}`: bytes from node:crypto's CSPRNG, base64. */
export async function random(_ctx: AppContext, _tenantId: string, body: RandomBody) {
  return { data: randomBytes(body.bytes).toString('base64') };
}
