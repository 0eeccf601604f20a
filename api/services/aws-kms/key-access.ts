/**
 * What every AWS KMS operation on a key starts from (docs/aws-kms.md): the key a KeyId names
 * (destroyed at first read once its deletion date has come), its AWS KeyState, the refusal of a
 * change to a key pending deletion, a write under the key's row lock, text members as the native
 * API takes text, and the Limit/Marker paging of the List operations.
 */
import type { Knex } from 'knex';
import type { AppContext } from '../../context.ts';
import { unfitText } from '../../../shared/ids.ts';
import { findKeyRow } from '../../../shared/keys/lookup.ts';
import { destroyIfDue, pendingDeletion } from '../keys/deletion.ts';
import { AwsError, keyNotFound } from './errors.ts';
import { keyArn, resolveKeyId, type AwsCaller } from './ids.ts';

export type Input = Record<string, unknown>;
export type Answer = Promise<Record<string, unknown>>;
export type Row = Record<string, unknown>;

export const epoch = (v: unknown) => Math.floor(new Date(v as string).getTime() / 1000);

/**
 * A text member as the native API takes text: no NUL, no lone surrogate (shared/ids.ts), so the
 * database never sees what it refuses.
 */
export function text(v: unknown, field: string, type = 'ValidationException'): string {
  if (typeof v !== 'string') throw new AwsError(type, `${field} must be a string`);
  const unfit = unfitText(v);
  if (unfit) throw new AwsError(type, `${field} ${unfit}`);
  return v;
}

/**
 * The key row a KeyId names; NotFoundException for a key destroyed by its deletion (archived).
 * The first read of a key whose deletion date has come destroys it (deletion.ts), as the sweep
 * would.
 */
export async function keyOf(ctx: AppContext, c: AwsCaller, input: Input, _actor?: string) {
  const kid = await resolveKeyId(ctx, c, input.KeyId);
  let row = await findKeyRow(ctx.db, c.tenantId, kid);
  if (
    row &&
    pendingDeletion(row) &&
    new Date(row.deletion_at as string) <= new Date() &&
    (await destroyIfDue(ctx, c.tenantId, kid))
  )
    row = await findKeyRow(ctx.db, c.tenantId, kid);
  if (!row || row.state === 'archived') throw keyNotFound(String(input.KeyId));
  return { kid, row };
}

/**
 * KMSInvalidStateException for a key pending deletion, as AWS answers every change to one but
 * its cancellation (aliases, tags, description): an alias written beside the destruction would
 * outlive it, pointing at a destroyed key.
 */
export function refusePending(c: AwsCaller, kid: string, row: Row): void {
  if (pendingDeletion(row))
    throw new AwsError('KMSInvalidStateException', `Key ${keyArn(c, kid)} is pending deletion.`);
}

/**
 * Runs `write` with the key's row locked, once the locked row shows the key neither destroyed nor
 * pending deletion: the destruction (deletion.ts) takes the same lock, so a write either lands
 * before it (and goes with the key) or sees the key gone.
 */
export async function whileKeyLive<T>(
  ctx: AppContext,
  c: AwsCaller,
  kid: string,
  keyId: unknown,
  write: (trx: Knex, row: Row) => Promise<T>,
): Promise<T> {
  return ctx.db.transaction(async (trx) => {
    const row = await trx('keys').where({ tenant_id: c.tenantId, kid }).forUpdate().first();
    if (!row || row.state === 'archived') throw keyNotFound(String(keyId));
    refusePending(c, kid, row);
    return write(trx, row);
  });
}

/** The AWS KeyState of a key row. */
export function keyState(row: Row): string {
  if (pendingDeletion(row)) return 'PendingDeletion';
  if (row.state === 'active') return 'Enabled';
  if (row.state === 'suspended') return 'Disabled';
  return 'Unavailable';
}

/** The Limit member (1 to 1000, default 100) and the Marker (an offset we issued). */
export function paging(input: Input): { limit: number; offset: number } {
  const limit = input.Limit ?? 100;
  if (!Number.isSafeInteger(limit) || (limit as number) < 1 || (limit as number) > 1000)
    throw new AwsError('ValidationException', 'Limit must be an integer from 1 to 1000');
  const marker = input.Marker;
  const offset = marker === undefined ? 0 : Number(marker);
  if (marker !== undefined && (typeof marker !== 'string' || !/^\d{1,9}$/.test(marker)))
    throw new AwsError('InvalidMarkerException', 'The marker is not one this service issued.');
  return { limit: limit as number, offset };
}

export function paged<T>(
  items: T[],
  limit: number,
  offset: number,
  member: string,
): Record<string, unknown> {
  const more = items.length > limit;
  return {
    [member]: items.slice(0, limit),
    Truncated: more,
    ...(more ? { NextMarker: String(offset + limit) } : {}),
  };
}
