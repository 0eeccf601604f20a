/**
 * The key resolver of one caller's request: the tenant's keys, with the caller's right to decrypt
 * (crypto.decrypt in its role) and its decryption-failure budget attached, so the CMS and JOSE
 * engines admit a decryption and count a failure in one place.
 */
import type { AppContext } from '../../context.ts';
import type { AccessClaims } from '../auth/access-tokens.ts';
import { tenantKeyResolver } from '../../../shared/keys/cms-resolver.ts';
import type { KeyResolver } from '../../../shared/pkcs7/types.ts';
import type { DecryptingCaller, DecryptionSource } from '../../../shared/keys/decryption-budget.ts';
import { subjectActor } from '../../../shared/audit/actor.ts';
import { WORK_COSTS } from '../../../shared/keys/work-budget.ts';

/** Who the claims are as a decrypting caller. */
export function decryptingCaller(claims: AccessClaims): DecryptingCaller {
  return {
    tenantId: claims.tenantId,
    principal: subjectActor(claims),
    mayDecrypt: claims.permissions.includes('crypto.decrypt'),
  };
}

/**
 * The tenant's keys as the caller may use them; `source` labels its failures. A password
 * recipient's PBKDF2 runs on the expensive-work pool and spends the caller's budget of it
 * (docs/expensive-work.md), wherever the conversion itself runs.
 */
export function callerKeyResolver(
  ctx: AppContext,
  claims: AccessClaims,
  source: DecryptionSource,
): KeyResolver {
  const caller = decryptingCaller(claims);
  return {
    ...tenantKeyResolver(ctx, claims.tenantId, { caller, budget: ctx.decryption, source }),
    derivePasswordKey: async (r) =>
      Buffer.from(
        await ctx.expensive.run<Uint8Array>('derivePbkdf2', r, {
          principal: caller.principal,
          kind: 'key-derivation',
          cost: WORK_COSTS.pbkdf2(r.iterations),
        }),
      ),
  };
}
