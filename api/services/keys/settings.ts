/**
 * Key settings: description, the key's own rotation period, the minimum decryption
 * version, and the rotation schedule they lead to. A generated, active key rotates when its
 * `next_rotation_at` passes: last rotation (or creation) plus the key's own period, else the
 * tenant's effective policy period. Imported and exchanged keys have no schedule: their material
 * comes from elsewhere.
 */
import type { Knex } from 'knex';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { keyNotFound } from '../../../shared/keys/lifecycle.ts';
import {
  allowedUsagesOf,
  enabledUsages,
  readEnabledUsages,
  refuseDuplicate,
  usageColumns,
} from '../../../shared/keys/usages.ts';
import type { KeySettingsView } from '../../schemas/keys.ts';

/** The longest rotation period, for a key as for a policy override (ten years). */
export const MAX_ROTATION_PERIOD_DAYS = 3650;
const MAX_DESCRIPTION = 500;
const DAY_MS = 86_400_000;

/**
 * A change of settings, its types and bounds checked by the route's schema (a description of at
 * most 500 characters, a period from 1 to 3650 days, a version of at least 1); null clears a
 * value. What needs the key (the current version, its source, usage and certificate) is checked
 * here, under its lock.
 */
export interface SettingsPatch {
  description?: string | null;
  rotationPeriodDays?: number | null;
  minDecryptionVersion?: number;
  archiveSigning?: boolean;
  trustAnchor?: boolean;
  /** The usages to enable, checked under the key's lock against the usages it allows. */
  usages?: readonly string[];
  /** Vault Transit `deletion_allowed`: DELETE keys/:name may destroy the key. */
  transitDeletionAllowed?: boolean;
}

const iso = (v: unknown) => (v ? new Date(v as string).toISOString() : null);

/** True when the key rotates on a schedule (generated material; imported keys are re-imported instead). */
export const rotates = (row: Record<string, unknown>) => row.source === 'generated';

/** The settings members of a key row; `policyPeriodDays` is the tenant's effective policy period. */
export function settingsView(
  row: Record<string, unknown>,
  policyPeriodDays: number | null,
): KeySettingsView {
  const own =
    row.rotation_period_days === null || row.rotation_period_days === undefined
      ? null
      : Number(row.rotation_period_days);
  const period = rotates(row) ? (own ?? policyPeriodDays) : null;
  return {
    description: (row.description as string | null | undefined) ?? null,
    rotationPeriodDays: period,
    rotationPeriodFrom: period === null ? null : own !== null ? 'key' : 'policy',
    nextRotationAt: rotates(row) && row.state === 'active' ? iso(row.next_rotation_at) : null,
    lastRotatedAt: iso(row.last_rotated_at),
    minDecryptionVersion: Number(row.min_decryption_version ?? 1),
    archiveSigning: row.archive_signing === true,
    trustAnchor: row.trust_anchor === true,
  };
}

/** `from` plus `days` days. */
export const afterDays = (from: Date, days: number) => new Date(from.getTime() + days * DAY_MS);

/** The tenant's effective policy rotation period (tenantPolicy in api/services/policies.ts), passed in to keep this module free of routes. */
export type PolicyPeriod = (tenantId: string) => Promise<number>;

/** Checks a rotationPeriodDays value (key creation and PATCH); null clears it (the policy's applies). */
export function readRotationPeriod(v: number | null): number | null {
  if (v === null) return null;
  // The rows' schemas bound it too; the AWS and Transit APIs, which have no such schema, call here.
  if (!Number.isInteger(v) || v < 1 || v > MAX_ROTATION_PERIOD_DAYS)
    throw problem(
      'validation_failed',
      `rotationPeriodDays must be an integer from 1 to ${MAX_ROTATION_PERIOD_DAYS}, or null to follow the policy`,
      { details: { field: 'rotationPeriodDays' } },
    );
  return v;
}

/** Checks a description value; null clears it. */
export function readDescription(v: string | null): string | null {
  if (v === null) return null;
  if (v.length > MAX_DESCRIPTION)
    throw problem(
      'validation_failed',
      `description must be a string of at most ${MAX_DESCRIPTION} characters, or null`,
      { details: { field: 'description' } },
    );
  return v;
}

/**
 * Applies a settings change under the key's row lock and answers the new row. The minimum
 * decryption version may not pass the current version (Vault refuses the same): versions below
 * it are kept, so lowering it again makes them decrypt again. A new period reschedules the key
 * from its last rotation, so a shorter period can make it due at once.
 */
export async function applySettings(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  patch: SettingsPatch,
  policyPeriod: PolicyPeriod,
): Promise<Record<string, unknown>> {
  const period = patch.rotationPeriodDays === undefined ? null : await policyPeriod(tenantId);
  const row = await ctx.db.transaction(async (trx) => {
    const key = await trx('keys').where({ tenant_id: tenantId, kid }).forUpdate().first();
    if (!key) throw keyNotFound(kid);
    const update: Record<string, unknown> = { updated_at: new Date() };
    if (patch.description !== undefined) update.description = patch.description;
    if (patch.minDecryptionVersion !== undefined) {
      if (patch.minDecryptionVersion > key.current_version) {
        throw problem(
          'validation_failed',
          `minDecryptionVersion ${patch.minDecryptionVersion} is above the current version ${key.current_version} of key ${kid}`,
          { details: { field: 'minDecryptionVersion', currentVersion: key.current_version } },
        );
      }
      update.min_decryption_version = patch.minDecryptionVersion;
    }
    if (patch.rotationPeriodDays !== undefined) {
      if (!rotates(key) && patch.rotationPeriodDays !== null)
        throw problem(
          'invalid_transition',
          `key ${kid} was ${key.source}; it does not rotate, so it has no rotation period`,
          { details: { kid, source: key.source } },
        );
      update.rotation_period_days = patch.rotationPeriodDays;
      if (rotates(key))
        update.next_rotation_at = afterDays(
          new Date(key.last_rotated_at ?? key.created_at),
          patch.rotationPeriodDays ?? period!,
        );
    }
    if (patch.transitDeletionAllowed !== undefined)
      update.transit_deletion_allowed = patch.transitDeletionAllowed;
    if (patch.trustAnchor !== undefined) {
      if (patch.trustAnchor && key.usage !== 'verify')
        throw problem(
          'invalid_transition',
          `key ${kid} has usage ${key.usage}; trust anchors are certificates imported to verify only`,
          { details: { field: 'trustAnchor', usage: key.usage } },
        );
      update.trust_anchor = patch.trustAnchor;
    }
    let usages = enabledUsages(key);
    if (patch.usages !== undefined) {
      // Narrowed or widened within what the certificate (or the type) allows, never past it.
      const allowed = allowedUsagesOf(key);
      usages = readEnabledUsages(patch.usages, kid, allowed);
      const version = await trx('key_versions')
        .where({ key_id: key.id, version: key.current_version })
        .first('issuer_serial');
      await refuseDuplicate(trx, tenantId, version?.issuer_serial ?? undefined, usages, key.id);
      Object.assign(update, usageColumns(key.type, usages, allowed));
    }
    const archiveSigning = patch.archiveSigning ?? key.archive_signing === true;
    if (archiveSigning && patch.archiveSigning === undefined && !usages.includes('sign'))
      throw problem(
        'invalid_transition',
        `key ${kid} is the archive signing key; it keeps sign among its usages (set archiveSigning false first)`,
        { details: { field: 'usages', usages } },
      );
    if (patch.archiveSigning !== undefined) {
      if (patch.archiveSigning && (!usages.includes('sign') || key.state !== 'active'))
        throw problem(
          'invalid_transition',
          `key ${kid} is ${key.state} with usage ${usages.join(' and ')}; the archive signing key is an active signing key`,
          { details: { field: 'archiveSigning', usage: key.usage, usages, state: key.state } },
        );
      // One per tenant: setting it moves it here from the key that held it.
      if (patch.archiveSigning)
        await trx('keys')
          .where({ tenant_id: tenantId, archive_signing: true })
          .whereNot({ id: key.id })
          .update({ archive_signing: false, updated_at: new Date() });
      update.archive_signing = patch.archiveSigning;
    }
    const [updated] = await trx('keys').where({ id: key.id }).update(update).returning('*');
    // The runtime caches carry minDecryptionVersion: the change commits with it, to every instance.
    return {
      updated: updated as Record<string, unknown>,
      announce: await ctx.keys.changedIn(trx, tenantId, kid),
    };
  });
  row.announce();
  return row.updated;
}

/**
 * Reschedules a tenant's generated keys that follow the policy, after its rotation period
 * changed: each is due its last rotation (or creation) plus the new period.
 */
export async function rescheduleTenant(
  db: Knex,
  tenantId: string,
  policyPeriodDays: number,
): Promise<void> {
  await db('keys')
    .where({ tenant_id: tenantId, source: 'generated' })
    .whereNull('rotation_period_days')
    .update({
      next_rotation_at: db.raw('coalesce(last_rotated_at, created_at) + make_interval(days => ?)', [
        policyPeriodDays,
      ]),
    });
}

/**
 * Gives a schedule to generated keys that have none (keys made before migration 006): from their
 * last rotation or creation, by their own period or the policy's. Answers how many were scheduled.
 */
export async function scheduleUnscheduled(
  ctx: AppContext,
  policyPeriod: PolicyPeriod,
  limit = 100,
): Promise<number> {
  const tenants = await ctx
    .db('keys')
    .whereNull('next_rotation_at')
    .where({ source: 'generated', state: 'active' })
    .distinct('tenant_id')
    .limit(limit);
  let n = 0;
  for (const { tenant_id: tenantId } of tenants) {
    const period = await policyPeriod(tenantId);
    n += await ctx
      .db('keys')
      .where({ tenant_id: tenantId, source: 'generated' })
      .whereNull('next_rotation_at')
      .update({
        next_rotation_at: ctx.db.raw(
          'coalesce(last_rotated_at, created_at) + make_interval(days => coalesce(rotation_period_days, ?))',
          [period],
        ),
      });
  }
  return n;
}
