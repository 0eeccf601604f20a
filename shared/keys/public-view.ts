/**
 * Public keys per version: every retained version of an asymmetric key as a public
 * JWK whose `kid` is `<kid>#<version>`, the name the service's JOSE headers give that version, and
 * as SPKI PEM. Built from the loaded KeyObjects of the key cache: only the public half is exported,
 * so no private member (`d`, `p`, `q`, `dp`, `dq`, `qi`, `priv`) or secret (`k`) can appear.
 */
import { problem } from '../errors/index.ts';
import { keyTypeSpec } from '../crypto/registry.ts';
import { publicJwk, publicPem, type PublicJwk } from '../crypto/material.ts';
import { versionedKid } from '../jose/kid.ts';
import type { KeyCache } from './cache.ts';
import { unusable } from './lifecycle.ts';

/** One retained version's public key. */
export interface PublicKeyVersion {
  version: number;
  jwk: PublicJwk;
  /** SPKI PEM; null for the ML-KEM hybrids, which have no SPKI form (its JWK carries the key). */
  pem: string | null;
}

/** The public view of a key: its metadata and the public key of every retained version, oldest first. */
export interface PublicKeysView {
  kid: string;
  type: string;
  usage: string;
  /** The enabled usages (shared/keys/usages.ts). */
  usages: string[];
  state: string;
  currentVersion: number;
  minDecryptionVersion: number;
  versions: PublicKeyVersion[];
}

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
      jwk: publicJwk(loaded, { kid: versionedKid(kid, version), usage: key.usages }),
      pem: publicPem(loaded),
    }));
  return {
    kid,
    type: key.type,
    usage: key.usage,
    usages: [...key.usages],
    state: key.state,
    currentVersion: key.currentVersion,
    minDecryptionVersion: key.minDecryptionVersion,
    versions,
  };
}
