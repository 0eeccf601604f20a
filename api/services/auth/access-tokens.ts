/**
 * JWT access tokens (RFC 9068 profile, RFC 8725 rules): ES256 only, header `typ: at+jwt` and a
 * known `kid`, issuer and audience checked, expiry with 30 s leeway, revocation by jti. Built and
 * checked with node:crypto directly: the hot path is a cache lookup, and a first sight costs one
 * ECDSA verify.
 */
import { randomUUID, verify } from 'node:crypto';
import type { SigningKeys } from './signing-keys.ts';
import type { RevocationList } from './revocation.ts';
import type { TokenSigner } from './token-signer.ts';

export const AUDIENCE_ADMIN = 'service-admin';
export const AUDIENCE_CORE = 'service-core';
export const AUDIENCE_LEGACY = 'service-legacy';

const LEEWAY_S = 30;
const CACHE_MAX = 20_000;

/** The claims of an access token. */
export interface AccessClaims {
  iss: string;
  sub: string;
  aud: string;
  tenantId: string;
  permissions: string[];
  client_id: string;
  jti: string;
  iat: number;
  exp: number;
  /** Delegation (token exchange): who acts, and the jti of the token they exchanged. */
  act?: { sub: string; tenantId: string; jti?: string };
  /** The refresh-token family the token was issued with (password, refresh and legacy grants). */
  fam?: string;
  /** Legacy tokens: the legacy role names. */
  scopes?: string[];
  /** 'user' or 'workload'. */
  kind: 'user' | 'workload';
}

export type NewClaims = Omit<AccessClaims, 'iss' | 'jti' | 'iat' | 'exp'>;

/**
 * The token of an `Authorization: Bearer <token>` header, read the one way every bearer check
 * reads it (the scheme name is case-insensitive, RFC 7235 2.1, RFC 6750 2.1): null when the
 * header is absent, of another scheme, or carries no token.
 */
export function bearerToken(header: string | undefined): string | null {
  if (!header || header.slice(0, 7).toLowerCase() !== 'bearer ') return null;
  const token = header.slice(7).trim();
  return token === '' ? null : token;
}

export interface AccessTokens {
  /** Signs a new token; the ECDSA signature runs off the event loop (api/services/auth/token-signer.ts). */
  issue(claims: NewClaims, ttlSeconds: number): Promise<{ token: string; claims: AccessClaims }>;
  /** Verified claims, or null for any token that must not be accepted (one answer: 401). */
  verify(token: string): AccessClaims | null;
  /** Like verify, but reloads the signing keys once on an unknown kid (tokens of another instance's new key). */
  verifyFresh(token: string): Promise<AccessClaims | null>;
}

const b64url = (buf: Buffer | string) => Buffer.from(buf).toString('base64url');

/** Creates the issuer/verifier for one issuer URL. */
export function createAccessTokens(
  issuer: string,
  keys: SigningKeys,
  revocation: RevocationList,
  signer: TokenSigner,
): AccessTokens {
  // Bounded cache of verified tokens (insertion order = age; Map iteration evicts oldest).
  const cache = new Map<string, AccessClaims>();
  const byJti = new Map<string, string>();
  revocation.onRevoked((jti) => {
    const token = byJti.get(jti);
    if (token) cache.delete(token);
    byJti.delete(jti);
  });

  function remember(token: string, claims: AccessClaims): void {
    if (cache.size >= CACHE_MAX) {
      const oldest = cache.keys().next().value as string;
      const old = cache.get(oldest);
      cache.delete(oldest);
      if (old) byJti.delete(old.jti);
    }
    cache.set(token, claims);
    byJti.set(claims.jti, token);
  }

  function stillValid(claims: AccessClaims): boolean {
    return (
      claims.exp + LEEWAY_S > Date.now() / 1000 &&
      !revocation.isRevoked(claims.jti) &&
      !revocation.isTenantSuspended(claims.tenantId) &&
      !revocation.isSubjectRevoked(claims.sub, claims.iat) &&
      !(claims.fam !== undefined && revocation.isFamilyRevoked(claims.fam)) &&
      // An exchanged token ends with the token it came from (revoked, or its subject disabled).
      !(
        claims.act &&
        (revocation.isSubjectRevoked(claims.act.sub, claims.iat) ||
          (claims.act.jti !== undefined && revocation.isRevoked(claims.act.jti)))
      )
    );
  }

  function parseAndCheck(
    token: string,
    keyFor: (kid: string) => ReturnType<SigningKeys['publicKeySync']>,
  ): AccessClaims | null {
    const parts = token.split('.');
    if (parts.length !== 3 || token.length > 8192) return null;
    let header: Record<string, unknown>;
    let claims: AccessClaims;
    try {
      header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
      claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    } catch {
      return null;
    }
    // RFC 8725 3.1: the algorithm is pinned, never taken from the token; RFC 9068 2.1: typ.
    if (
      header.alg !== 'ES256' ||
      header.typ !== 'at+jwt' ||
      typeof header.kid !== 'string' ||
      header.crit !== undefined
    )
      return null;
    const key = keyFor(header.kid);
    if (!key) return null;
    const signature = Buffer.from(parts[2], 'base64url');
    if (signature.length !== 64) return null;
    const ok = verify(
      'sha256',
      Buffer.from(`${parts[0]}.${parts[1]}`),
      { key, dsaEncoding: 'ieee-p1363' },
      signature,
    );
    if (!ok) return null;
    if (claims === null || typeof claims !== 'object') return null;
    if (
      claims.iss !== issuer ||
      typeof claims.sub !== 'string' ||
      typeof claims.tenantId !== 'string' ||
      typeof claims.jti !== 'string'
    )
      return null;
    if (
      typeof claims.exp !== 'number' ||
      typeof claims.iat !== 'number' ||
      !Array.isArray(claims.permissions)
    )
      return null;
    if (claims.iat > Date.now() / 1000 + LEEWAY_S) return null;
    return claims;
  }

  const api: AccessTokens = {
    async issue(input, ttlSeconds) {
      const current = keys.current();
      const iat = Math.floor(Date.now() / 1000);
      const claims: AccessClaims = {
        iss: issuer,
        ...input,
        jti: randomUUID(),
        iat,
        exp: iat + ttlSeconds,
      };
      const head = b64url(JSON.stringify({ alg: 'ES256', typ: 'at+jwt', kid: current.kid }));
      const body = b64url(JSON.stringify(claims));
      const sig = await signer(`${head}.${body}`, current.privateKey);
      return { token: `${head}.${body}.${b64url(sig)}`, claims };
    },
    verify(token) {
      const cached = cache.get(token);
      if (cached) return stillValid(cached) ? cached : null;
      const claims = parseAndCheck(token, (kid) => keys.publicKeySync(kid));
      if (!claims || !stillValid(claims)) return null;
      remember(token, claims);
      return claims;
    },
    async verifyFresh(token) {
      const quick = api.verify(token);
      if (quick) return quick;
      try {
        const kid = JSON.parse(
          Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8'),
        ).kid;
        if (typeof kid === 'string' && !keys.publicKeySync(kid) && (await keys.publicKey(kid)))
          return api.verify(token);
      } catch {
        return null;
      }
      return null;
    },
  };
  return api;
}
