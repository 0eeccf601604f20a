/**
 * The key resolver of one caller's request: the tenant's keys, with the caller's right to decrypt
 * (crypto.decrypt in its role) and its decryption-failure budget attached, so the CMS and JOSE
 * engines admit a decryption and count a failure in one place (issue 24; contract 10).
 */
import type { AppContext } from '../../context.ts';
import type { AccessClaims } from '../auth/access-tokens.ts';
import { tenantKeyResolver } from '../../../shared/keys/cms-resolver.ts';
import type { KeyResolver } from '../../../shared/pkcs7/types.ts';
import type { DecryptingCaller, DecryptionSource } from '../../../shared/keys/decryption-budget.ts';
import { subjectActor } from '../../../shared/audit/actor.ts';

/** Who the claims are as a decrypting caller. */
export function decryptingCaller(claims: AccessClaims): DecryptingCaller {
  return {
    tenantId: claims.tenantId,
    principal: subjectActor(claims),
    mayDecrypt: claims.permissions.includes('crypto.decrypt'),
  };
}

/** The tenant's keys as the caller may use them; `source` labels its failures. */
export function callerKeyResolver(
  ctx: AppContext,
  claims: AccessClaims,
  source: DecryptionSource,
): KeyResolver {
  return tenantKeyResolver(ctx, claims.tenantId, {
    caller: decryptingCaller(claims),
    budget: ctx.decryption,
    source,
  });
}
