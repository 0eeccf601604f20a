/**
 * The steps of a cryptographic exchange that other services cause as well: the audit of a step
 * in both tenants' chains, and the withdrawal of a key's pending offers when the key stops being
 * active (suspended or revoked). Apart from api/services/exchanges.ts, which needs the key store,
 * so that the key store can call it without an import cycle.
 */
import type { Knex } from 'knex';
import type { AppContext } from '../context.ts';
import { Exchange } from '../../shared/db/models/exchanges.ts';

/** Records one step in the audit chains of both tenants (contract: every step, both sides). */
export function auditBoth(
  ctx: AppContext,
  r: Exchange,
  actor: string,
  action: string,
  details: { from?: Record<string, unknown>; to?: Record<string, unknown> } = {},
): void {
  const common = {
    exchangeId: r.id,
    fromTenantId: r.from_tenant_id,
    toTenantId: r.to_tenant_id,
    kid: r.source_kid,
    mode: r.mode,
  };
  for (const [tenantId, own] of [
    [r.from_tenant_id, details.from],
    [r.to_tenant_id, details.to],
  ] as const) {
    ctx.audit.record({
      tenantId,
      actor,
      action,
      outcome: 'success',
      target: r.id,
      details: { ...common, ...own },
    });
  }
}

/**
 * Cancels, inside the transaction that moves key `kid` of `tenantId` to `keyState`, every pending
 * offer of that key and drops its payload: an offer lives up to 30 days, and a key revoked as
 * compromised (or suspended) in the meantime must not arrive in the other tenant as active.
 * Answers the function that audits the cancellations, to call after the commit.
 */
export async function withdrawOffersOf(
  ctx: AppContext,
  trx: Knex,
  where: { tenantId: string; kid: string; keyState: string; actor: string },
): Promise<() => void> {
  const rows = await Exchange.query(trx)
    .where({ from_tenant_id: where.tenantId, source_kid: where.kid, state: 'pending' })
    .patch({ state: 'cancelled', payload: null, decided_by: where.actor, decided_at: new Date() })
    .returning('*');
  const reason = `the offered key was ${where.keyState}`;
  return () => {
    for (const r of rows)
      auditBoth(ctx, r, where.actor, 'cryptographicexchange.cancel', {
        from: { reason, keyState: where.keyState },
        to: { reason, keyState: where.keyState },
      });
  };
}
