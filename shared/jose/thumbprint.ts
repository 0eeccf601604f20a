/**
 * JWK thumbprints (RFC 7638): SHA-256 over the required members of the key type, in
 * lexicographic order, as JSON without whitespace. `AKP` keys (RFC 9964 section 6) hash `alg`,
 * `kty` and `pub`: the algorithm is part of an AKP key's identity.
 */
import { createHash } from 'node:crypto';
import { problem } from '../errors/index.ts';

/** The required members per `kty`, already in lexicographic order. Map: `kty` is caller input. */
const REQUIRED = new Map<string, readonly string[]>([
  ['AKP', ['alg', 'kty', 'pub']],
  ['EC', ['crv', 'kty', 'x', 'y']],
  ['OKP', ['crv', 'kty', 'x']],
  ['RSA', ['e', 'kty', 'n']],
  ['oct', ['k', 'kty']],
]);

/** The base64url SHA-256 thumbprint of a JWK; a key missing a required member is refused. */
export function jwkThumbprint(jwk: Record<string, unknown>): string {
  const members = typeof jwk.kty === 'string' ? REQUIRED.get(jwk.kty) : undefined;
  if (!members) throw problem('validation_failed', 'the JWK has no kty this service knows');
  const canonical: Record<string, string> = {};
  for (const m of members) {
    const v = jwk[m];
    if (typeof v !== 'string' || v === '')
      throw problem('validation_failed', `the JWK lacks its ${m} member`);
    canonical[m] = v;
  }
  return createHash('sha256').update(JSON.stringify(canonical)).digest('base64url');
}
