/**
 * Public keys per version: every retained version of an asymmetric key as a public
 * JWK whose `kid` is `<kid>#<version>`, the name the service's JOSE headers give that version, and
 * as SPKI PEM. Built from the loaded KeyObjects of the key cache: only the public half is exported,
 * so no private member (`d`, `p`, `q`, `dp`, `dq`, `qi`, `priv`) or secret (`k`) can appear.
 */
import { problem } from '../../../shared/errors/index.ts';
import { keyTypeSpec } from '../../../shared/crypto/registry.ts';
import { publicJwk, publicPem } from '../../../shared/crypto/material.ts';
import { versionedKid } from '../../../shared/jose/kid.ts';
import type { KeyCache } from '../../../shared/keys/cache.ts';
import { unusable } from '../../../shared/keys/lifecycle.ts';
import type { PublicKeysView } from '../../schemas/keys.ts';

/**
 * The public keys of a tenant's key. `runtime` (the Core API) refuses revoked and archived keys as
 * every runtime use does; the admin view shows any state. Symmetric keys (AES, HMAC)
 * have no public key: 422 key-usage-mismatch. Versions below minDecryptionVersion are left out,
 * since nothing they signed verifies any more.
 */
export async function publicKeysOf(
  deps: { keys: KeyCache },
  tenantId: string,
  kid: string,
  opts: { runtime: boolean },
): Promise<PublicKeysView> {
  // A kid no key can have is key-not-found here (a path segment), by the cache's one rule.
  const key = await deps.keys.get(tenantId, kid);
  if (opts.runtime && (key.state === 'revoked' || key.state === 'archived'))
    throw unusable(kid, key.state);
  const spec = keyTypeSpec(key.type);
  if (spec.symmetric) {
    throw problem(
      'key_usage_mismatch',
      `key ${kid} is a symmetric ${key.type} key: it has no public key`,
      { details: { keyType: key.type } },
    );
  }
  const versions = [...key.versions.entries()]
    .filter(([v]) => v >= key.minDecryptionVersion)
    .sort(([a], [b]) => a - b)
    .map(([version, loaded]) => ({
      version,
      // Public members only, with kty and the versioned kid: what the schema states of it.
      jwk: publicJwk(loaded, {
        kid: versionedKid(kid, version),
        usage: key.usages,
      }) as PublicKeysView['versions'][number]['jwk'],
      pem: publicPem(loaded),
    }));
  return {
    kid,
    type: key.type,
    // Not symmetric (refused above), so never mac.
    usage: key.usage as PublicKeysView['usage'],
    usages: [...key.usages] as PublicKeysView['usages'],
    state: key.state,
    currentVersion: key.currentVersion,
    minDecryptionVersion: key.minDecryptionVersion,
    versions,
  };
}
