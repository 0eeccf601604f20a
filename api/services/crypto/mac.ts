/**
 * MAC operations (contract 8, AWS KMS GenerateMac/VerifyMac, Vault Transit hmac/verify): HMAC keys
 * of the tenant compute a MAC with their newest version and verify with any retained one. HMAC of
 * a JSON-sized message takes microseconds, so both run on the event loop, never in the pool.
 */
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { assertUsage, keyTypeSpec } from '../../../shared/crypto/registry.ts';
import {
  checkMacLength,
  computeMac,
  macAlgorithm,
  macMatches,
} from '../../../shared/crypto/mac.ts';
import { onlyKnown } from '../../../shared/validation/members.ts';
import { retainedVersion } from '../../../shared/keys/lifecycle.ts';
import { b64, operationKey } from './runtime.ts';

/** The JSON members each operation knows; any other is a 400 naming it (contract 8). */
export const GENERATE_MAC_MEMBERS: ReadonlySet<string> = new Set(['kid', 'data']);
export const VERIFY_MAC_MEMBERS: ReadonlySet<string> = new Set(['kid', 'data', 'mac', 'version']);

/** `{kid, data}` → `{kid, version, algorithm, mac}`: HMAC of the data under the key's newest version. */
export async function generateMac(
  ctx: AppContext,
  tenantId: string,
  body: Record<string, unknown>,
) {
  onlyKnown(body, GENERATE_MAC_MEMBERS);
  const key = await operationKey(ctx, tenantId, body.kid);
  assertUsage(key, 'mac');
  const data = b64(body.data, 'data');
  const v = key.currentVersion;
  const loaded = key.versions.get(v)!;
  return {
    kid: key.kid,
    version: v,
    algorithm: macAlgorithm(loaded.spec),
    mac: computeMac(loaded, data).toString('base64'),
  };
}

/**
 * `{kid, data, mac, version?}` → `{kid, version, valid: true}` or `{kid, valid: false}`. Without
 * `version`, every retained version (at or above minDecryptionVersion) is tried, newest first, one
 * constant-time compare each; a named version below it is key-version-retired. A MAC of the wrong
 * length is a 400, not `valid: false`: it was truncated or belongs to another algorithm.
 */
export async function verifyMac(ctx: AppContext, tenantId: string, body: Record<string, unknown>) {
  onlyKnown(body, VERIFY_MAC_MEMBERS);
  const key = await operationKey(ctx, tenantId, body.kid);
  assertUsage(key, 'mac');
  const data = b64(body.data, 'data');
  const mac = b64(body.mac, 'mac');
  checkMacLength(keyTypeSpec(key.type), mac);
  if (
    body.version !== undefined &&
    (!Number.isSafeInteger(body.version) || (body.version as number) < 1)
  ) {
    throw problem('validation_failed', 'version must be a positive integer', {
      details: { field: 'version' },
    });
  }
  const versions =
    body.version !== undefined
      ? [body.version as number]
      : [...key.versions.keys()].filter((v) => v >= key.minDecryptionVersion).sort((a, b) => b - a);
  for (const v of versions) {
    if (!key.versions.has(v)) continue;
    if (macMatches(retainedVersion(key, v), data, mac))
      return { kid: key.kid, version: v, valid: true };
  }
  return { kid: key.kid, valid: false };
}
