/**
 * MAC operations (AWS KMS GenerateMac/VerifyMac, Vault Transit hmac/verify): HMAC keys
 * of the tenant compute a MAC with their newest version and verify with any retained one. HMAC of
 * a JSON-sized message takes microseconds, so both run on the event loop, never in the pool.
 */
import type { AppContext } from '../../context.ts';
import { assertUsage, keyTypeSpec } from '../../../shared/crypto/registry.ts';
import {
  checkMacLength,
  computeMac,
  macAlgorithm,
  macMatches,
} from '../../../shared/crypto/mac.ts';
import { retainedVersion } from '../../../shared/keys/lifecycle.ts';
import { b64, operationKey } from './runtime.ts';
import type { GenerateMacBody, VerifyMacBody } from './bodies.ts';

/** `{kid, data}` → `{kid, version, algorithm, mac}`: HMAC of the data under the key's newest version. */
export async function generateMac(ctx: AppContext, tenantId: string, body: GenerateMacBody) {
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
export async function verifyMac(ctx: AppContext, tenantId: string, body: VerifyMacBody) {
  const key = await operationKey(ctx, tenantId, body.kid);
  assertUsage(key, 'mac');
  const data = b64(body.data, 'data');
  const mac = b64(body.mac, 'mac');
  checkMacLength(keyTypeSpec(key.type), mac);
  const versions =
    body.version !== undefined
      ? [body.version]
      : [...key.versions.keys()].filter((v) => v >= key.minDecryptionVersion).sort((a, b) => b - a);
  for (const v of versions) {
    if (!key.versions.has(v)) continue;
    if (macMatches(retainedVersion(key, v), data, mac))
      return { kid: key.kid, version: v, valid: true };
  }
  return { kid: key.kid, valid: false };
}
