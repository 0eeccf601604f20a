/**
 * The key listings of the APIs, each as its API documents it: the admin list (every state but
 * archived unless asked, with settings), the runtime and PQC lists (usable keys only) and the
 * legacy list (unpaged, at most 1000). The query itself is the one of shared/keys.
 */
import type { Knex } from 'knex';
import type { Config } from '../../shared/config/index.ts';
import { pageOf, type Page, type PageRequest } from '../../shared/db/page.ts';
import type { KeyState } from '../../shared/keys/lifecycle.ts';
import { keysQuery } from '../../shared/keys/lookup.ts';
import { keyView } from './keys/store.ts';
import { settingsView } from './keys/settings.ts';
import { tenantPolicy } from './policies.ts';
import { PQC_KEY_TYPES } from '../../shared/crypto/registry.ts';
import type { KeyView, KeySettingsView } from '../schemas/keys.ts';

/** Keys usable at runtime: archived and revoked keys cannot be used. */
const USABLE: readonly KeyState[] = ['active', 'suspended'];
const LEGACY_MAX = 1000;

/** GET /api/v3/admin/tenants/{tenantId}/keys: a page of keys in `state` (checked by the route's schema), or of every unarchived one. */
export async function listAdminKeys(
  ctx: { db: Knex; config: Config },
  tenantId: string,
  state: KeyState | undefined,
  page: PageRequest,
): Promise<Page<KeyView & KeySettingsView>> {
  const q = keysQuery(
    ctx.db,
    tenantId,
    state ? { states: [state] } : { exceptStates: ['archived'] },
  );
  const { effective } = await tenantPolicy(ctx, tenantId);
  return pageOf(q, 'kid', page, (r: Record<string, unknown>) => ({
    ...keyView(r),
    ...settingsView(r, effective.rotationPeriodDays),
  }));
}

/** GET /api/v3/crypto/keys: a page of the tenant's usable keys. */
export const listUsableKeys = (
  db: Knex,
  tenantId: string,
  page: PageRequest,
): Promise<Page<KeyView>> =>
  pageOf(keysQuery(db, tenantId, { states: USABLE }), 'kid', page, (r: Record<string, unknown>) =>
    keyView(r),
  );

/** GET /api/v3/pqc/keys: a page of the tenant's usable post-quantum keys. */
export const listPqcKeys = (
  db: Knex,
  tenantId: string,
  page: PageRequest,
): Promise<Page<KeyView>> =>
  pageOf(
    keysQuery(db, tenantId, { states: USABLE, types: PQC_KEY_TYPES }),
    'kid',
    page,
    (r: Record<string, unknown>) => keyView(r),
  );

/** GET /api/key-management/keys: every unarchived key, by kid, at most 1000, unpaged. */
export async function listLegacyKeys(db: Knex, tenantId: string): Promise<{ keys: KeyView[] }> {
  const rows: Array<Record<string, unknown>> = await keysQuery(db, tenantId, {
    exceptStates: ['archived'],
  })
    .orderBy('kid')
    .limit(LEGACY_MAX);
  return { keys: rows.map((r) => keyView(r)) };
}
