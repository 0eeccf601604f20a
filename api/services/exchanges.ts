/**
 * Cryptographic exchanges (`admin.cryptographicexchange.*`): tenant A offers one version of a
 * key to tenant B; B accepts (a new key appears in B, source `exchange`) or rejects; A may
 * cancel; an offer not decided by `expiresAt` expires. Each step is audited in both tenants.
 *
 * The material never leaves the service in the clear and is never in a response:
 *  - `public`: only the public key (SPKI DER) is copied; B's key can verify or encrypt only.
 *  - `wrapped`: at offer time the version's material is encrypted as a compact JWE to B's key
 *    `wrappingKid` (RSA-OAEP-256, ECDH-ES+A256KW, or dir A256GCM for AES; shared/jose/compact-jwe.ts).
 *    The JWE plaintext names the exchange, both tenants and the source kid and version, so a
 *    payload moved into another row fails the binding check on accept. Accepting decrypts with
 *    the wrapping key version the JWE header names and seals the material under the master key
 *    bound to B, the new kid and version 1 (storeKey), like any other key of B.
 * A JWE to B's key rather than a re-seal under the master key for B: the pending offer can
 * then be opened only through a key B holds, so B suspending or revoking that key voids every
 * offer wrapped for it, and the snapshot taken at offer time does not change if A later
 * rotates its key. The payload is cleared as soon as the offer is decided or expires.
 *
 * A suspending or revoking the offered key cancels its pending offers in the same transaction
 * (exchange-events.ts), and acceptance re-reads the source key under its row lock and delivers
 * nothing unless it is active: an offer lives up to 30 days, a compromise can come in between.
 * The offer tells A nothing of B's keys: it answers the same whether or not `wrappingKid` names an
 * active encrypt key of B (when it does not, nothing is wrapped and acceptance tells B why), and
 * a clash with a kid of B is settled at acceptance, which answers the conflict to B.
 */
import { createHash, createPrivateKey, createPublicKey, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AppContext } from '../context.ts';
import { AppError, problem } from '../../shared/errors/index.ts';
import { keyTypeSpec, type KeyType, type KeyUsage } from '../../shared/crypto/registry.ts';
import {
  deserializeMaterial,
  loadKeyVersion,
  serializeMaterial,
  type KeyMaterial,
} from '../../shared/crypto/material.ts';
import { decryptCompact, encryptCompact } from '../../shared/jose/compact-jwe.ts';
import { checkNewKey, storeKey, type ImportExtras } from './keys/store.ts';
import { findKeyRow, keyRow } from '../../shared/keys/lookup.ts';
import { loadStoredVersion } from '../../shared/keys/cache.ts';
import { unusable, type KeyState } from '../../shared/keys/lifecycle.ts';
import { isUuid } from '../../shared/ids.ts';
import { Exchange } from '../../shared/db/models/exchanges.ts';
import { KeyVersion } from '../../shared/db/models/keys.ts';
import { Tenant } from '../../shared/db/models/tenants.ts';
import { pageOf, type Page, type PageRequest } from '../../shared/db/page.ts';
import { auditBoth } from './exchange-events.ts';
import { enabledUsages } from '../../shared/keys/usages.ts';
import { SYSTEM_ACTOR } from '../../shared/audit/actor.ts';
import type { ExchangeView } from '../schemas/exchanges.ts';
import type { KeyView } from '../schemas/keys.ts';

const DEFAULT_TTL_SECONDS = 24 * 3600;

/** An exchange as one of its two tenants sees it (never the payload). */
const iso = (d: unknown) => (d ? new Date(d as string).toISOString() : null);

/** The view for `tenantId`, which is one of the two sides. */
export function exchangeView(r: Exchange, tenantId: string): ExchangeView {
  const incoming = r.to_tenant_id === tenantId;
  const expired = r.state === 'pending' && new Date(r.expires_at).getTime() <= Date.now();
  return {
    id: r.id,
    direction: incoming ? 'incoming' : 'outgoing',
    fromTenantId: r.from_tenant_id,
    toTenantId: r.to_tenant_id,
    kid: r.source_kid,
    version: Number(r.source_version),
    type: r.key_type,
    usage: r.usage,
    mode: r.mode,
    wrappingKid: r.wrapping_kid ?? null,
    state: expired ? 'expired' : r.state,
    publicKeySha256: r.public_key_sha256 ?? null,
    hasCertificate: Boolean(r.certificate_chain),
    createdAt: iso(r.created_at)!,
    expiresAt: iso(r.expires_at)!,
    decidedAt: iso(r.decided_at),
    ...(incoming ? { acceptedKid: r.accepted_kid ?? null } : {}),
  };
}

/** Marks pending offers past their expiry as expired, drops their payload and audits it. */
export async function sweepExpired(ctx: AppContext): Promise<void> {
  const rows = await Exchange.query(ctx.db)
    .where({ state: 'pending' })
    .andWhere('expires_at', '<=', new Date())
    .patch({ state: 'expired', payload: null })
    .returning('*');
  for (const r of rows) auditBoth(ctx, r, SYSTEM_ACTOR, 'cryptographicexchange.expire');
}

function invalid(message: string): AppError {
  return problem('validation_failed', message);
}

/** The body of an offer, its members and types checked by the route's schema. */
export interface OfferBody {
  kid: string;
  toTenantId: string;
  mode: 'public' | 'wrapped';
  wrappingKid?: string;
  expiresInSeconds?: number;
}

interface OfferInput {
  kid: string;
  toTenantId: string;
  mode: OfferBody['mode'];
  wrappingKid?: string;
  ttl: number;
}

/** The offer's cross-member rules: wrappingKid belongs to mode wrapped, and only there. */
function readOffer(body: OfferBody): OfferInput {
  const { kid, toTenantId, mode, wrappingKid, expiresInSeconds } = body;
  if (mode === 'wrapped' && wrappingKid === undefined)
    throw invalid('mode wrapped needs wrappingKid, an encrypt key of the receiving tenant');
  if (mode === 'public' && wrappingKid !== undefined)
    throw invalid('wrappingKid applies to mode wrapped only');
  return {
    kid,
    toTenantId: toTenantId.toLowerCase(),
    mode,
    wrappingKid,
    ttl: expiresInSeconds ?? DEFAULT_TTL_SECONDS,
  };
}

/** The public half of asymmetric material (hybrid: the public halves of its components). */
function publicPart(m: KeyMaterial): KeyMaterial {
  const spec = keyTypeSpec(m.type);
  if (spec.symmetric)
    throw problem(
      'key_usage_mismatch',
      `a ${m.type} key has no public part; offer it in mode wrapped`,
    );
  if (spec.family === 'hybrid')
    return {
      type: m.type,
      components: m.components!.map((c) => ({ publicKeyDer: c.publicKeyDer })),
    };
  const spki =
    m.publicKeyDer ??
    (createPublicKey(
      createPrivateKey({ key: m.privateKeyDer!, format: 'der', type: 'pkcs8' }),
    ).export({ type: 'spki', format: 'der' }) as Buffer);
  return { type: m.type, publicKeyDer: spki };
}

function fingerprint(m: KeyMaterial): string | null {
  if (keyTypeSpec(m.type).symmetric) return null;
  const pub = publicPart(m);
  const bytes = pub.publicKeyDer ?? Buffer.concat(pub.components!.map((c) => c.publicKeyDer));
  return createHash('sha256').update(bytes).digest('base64url');
}

/**
 * The receiving key a wrapped offer is encrypted to: an active encrypt key of B that speaks JWE,
 * or null when `kid` names none (missing, not active, signs, not JWE-capable, or not loadable).
 */
async function wrappingKeyOf(ctx: AppContext, tenantId: string, kid: string) {
  const row = await findKeyRow(ctx.db, tenantId, kid);
  if (
    !row ||
    row.state !== 'active' ||
    !enabledUsages(row).includes('encrypt') ||
    !keyTypeSpec(row.type as KeyType).jwe
  )
    return null;
  const current = Number(row.current_version);
  try {
    let loaded = (await ctx.keys.get(tenantId, kid)).versions.get(current);
    if (!loaded) {
      // The cache predates a rotation this instance has not heard of yet: reload once.
      await ctx.keys.invalidate(tenantId, kid);
      loaded = (await ctx.keys.get(tenantId, kid)).versions.get(current);
    }
    return loaded ?? null;
  } catch (err) {
    if (err instanceof AppError) return null;
    throw err;
  }
}

/** Opens the material of one version of a tenant's key (control plane; the hot path uses the cache). */
async function openVersion(
  ctx: AppContext,
  tenantId: string,
  key: Record<string, unknown>,
  version: number,
): Promise<{ material: KeyMaterial; row: KeyVersion }> {
  const row = (await KeyVersion.query(ctx.db).findOne({ key_id: key.id as string, version }))!;
  const kid = key.kid as string;
  const opened = ctx.masterKey.open(row.material, { tenantId, kid, version });
  try {
    const material = deserializeMaterial(opened);
    // Loaded as the hot path would, so stored material a load refuses is never offered.
    loadStoredVersion(
      material,
      { tenantId, kid, version, usage: key.usage as KeyUsage },
      ctx.logger,
    );
    return { material, row };
  } finally {
    opened.fill(0);
  }
}

/** Tenant `fromTenantId` offers the current version of `kid` to another tenant. */
export async function offerExchange(
  ctx: AppContext,
  fromTenantId: string,
  actor: string,
  body: OfferBody,
): Promise<ExchangeView> {
  const input = readOffer(body);
  if (input.toTenantId === fromTenantId)
    throw invalid('an exchange moves a key to another tenant; toTenantId is this tenant');
  const target = await Tenant.query(ctx.db).findOne({ id: input.toTenantId, status: 'active' });
  if (!target) throw invalid('toTenantId must name another active tenant');
  const key = await keyRow(ctx.db, fromTenantId, input.kid);
  if (key.state !== 'active') throw unusable(input.kid, key.state as KeyState);
  const version = Number(key.current_version);
  const { material, row: versionRow } = await openVersion(ctx, fromTenantId, key, version);
  const id = randomUUID();
  let payload: string | null = null;
  let wrapping: { kid: string; version: number | null } | null = null;
  // The answer is the same whether or not wrappingKid names an active encrypt key of B, so the
  // offering tenant learns nothing of B's keys: an offer with nothing wrapped is pending like any
  // other, and its acceptance tells B (who may know) why it cannot be delivered.
  const wrapKey =
    input.mode === 'wrapped'
      ? await wrappingKeyOf(ctx, input.toTenantId, input.wrappingKid!)
      : null;
  if (input.mode === 'public') {
    payload = serializeMaterial(publicPart(material)).toString('base64');
  } else if (!wrapKey) {
    wrapping = { kid: input.wrappingKid!, version: null };
  } else {
    const serialized = serializeMaterial(material);
    const envelope = Buffer.from(
      JSON.stringify({
        v: 1,
        exchangeId: id,
        fromTenantId,
        toTenantId: input.toTenantId,
        kid: key.kid,
        version,
        material: serialized.toString('base64'),
      }),
      'utf8',
    );
    payload = encryptCompact(wrapKey, envelope);
    serialized.fill(0);
    envelope.fill(0);
    wrapping = { kid: wrapKey.kid, version: wrapKey.version };
  }
  const now = new Date();
  const row = await Exchange.query(ctx.db).insert({
    id,
    from_tenant_id: fromTenantId,
    to_tenant_id: input.toTenantId,
    source_kid: key.kid as string,
    source_version: version,
    key_type: key.type as string,
    usage: key.usage as string,
    mode: input.mode,
    wrapping_kid: wrapping?.kid ?? null,
    wrapping_version: wrapping?.version ?? null,
    payload,
    public_key_sha256: fingerprint(material),
    certificate_chain: versionRow.certificate_chain,
    issuer_serial: versionRow.issuer_serial,
    subject_key_id: versionRow.subject_key_id,
    state: 'pending',
    created_by: actor,
    created_at: now,
    expires_at: new Date(now.getTime() + input.ttl * 1000),
  });
  auditBoth(ctx, row, actor, 'cryptographicexchange.offer', {
    from: { version, wrappingKid: row.wrapping_kid },
  });
  return exchangeView(row, fromTenantId);
}

/** An exchange of which `tenantId` is a side; a third tenant gets the same 404 as for a missing one. */
export async function findExchange(
  ctx: AppContext,
  tenantId: string,
  id: string,
): Promise<Exchange> {
  const row = isUuid(id)
    ? await Exchange.query(ctx.db)
        .where({ id })
        .andWhere((q) => q.where({ from_tenant_id: tenantId }).orWhere({ to_tenant_id: tenantId }))
        .first()
    : undefined;
  if (!row) throw problem('not_found', 'no such exchange');
  return row;
}

/** One page of the exchanges where the tenant is either side, filtered by direction and state (expired offers swept first). */
export async function listExchanges(
  ctx: AppContext,
  tenantId: string,
  filter: { direction?: 'incoming' | 'outgoing'; state?: string },
  page: PageRequest,
): Promise<Page<ExchangeView>> {
  await sweepExpired(ctx);
  const q = Exchange.query(ctx.db);
  if (filter.direction === 'incoming') q.where({ to_tenant_id: tenantId });
  else if (filter.direction === 'outgoing') q.where({ from_tenant_id: tenantId });
  else q.where((w) => w.where({ from_tenant_id: tenantId }).orWhere({ to_tenant_id: tenantId }));
  if (filter.state !== undefined) q.where({ state: filter.state });
  return pageOf(q, 'id', page, (r) => exchangeView(r, tenantId));
}

/** An exchange as `tenantId` sees it (expired offers swept first). */
export async function readExchange(
  ctx: AppContext,
  tenantId: string,
  id: string,
): Promise<ExchangeView> {
  await sweepExpired(ctx);
  return exchangeView(await findExchange(ctx, tenantId, id), tenantId);
}

function assertPending(r: Exchange): void {
  if (
    r.state === 'expired' ||
    (r.state === 'pending' && new Date(r.expires_at).getTime() <= Date.now())
  ) {
    throw problem('exchange_expired', `exchange ${r.id} expired at ${iso(r.expires_at)}`);
  }
  if (r.state !== 'pending')
    throw problem('exchange_not_pending', `exchange ${r.id} is ${r.state}`);
}

/** A conditional update found the row no longer pending: answer what it is now. */
async function lostRace(db: Knex, id: string): Promise<never> {
  const now = await Exchange.query(db).findById(id);
  if (now) assertPending(now);
  throw problem('conflict', `exchange ${id} changed concurrently; read it again`);
}

function requireSide(r: Exchange, tenantId: string, side: 'from' | 'to', action: string): void {
  if (r[`${side}_tenant_id`] !== tenantId) {
    throw problem(
      'forbidden',
      `only the ${side === 'to' ? 'receiving' : 'offering'} tenant can ${action} this exchange`,
    );
  }
}

/** Opens a wrapped payload with B's wrapping key and checks that it belongs to this exchange. */
async function unwrap(ctx: AppContext, r: Exchange): Promise<KeyMaterial> {
  const wrappingKid = r.wrapping_kid ?? '';
  const wrapRow = await keyRow(ctx.db, r.to_tenant_id, wrappingKid);
  if (wrapRow.state !== 'active') throw unusable(wrappingKid, wrapRow.state as KeyState);
  if (r.payload === null || r.wrapping_version === null)
    throw problem(
      'conflict',
      `exchange ${r.id} holds nothing: when it was offered, ${wrappingKid} was not an active AES, RSA or EC encrypt key of this tenant; reject it and ask for a new offer`,
    );
  const cached = await ctx.keys.get(r.to_tenant_id, wrappingKid);
  const broken = (why: string) =>
    problem(
      'unprocessable',
      `the wrapped key of exchange ${r.id} does not open with ${wrappingKid}: ${why}`,
    );
  let plain: Buffer;
  try {
    plain = decryptCompact(r.payload ?? '', (kid, version) => {
      const v = kid === wrappingKid ? cached.versions.get(version) : undefined;
      if (!v) throw broken('the JWE names another key version');
      return v;
    });
  } catch (err) {
    throw err instanceof AppError && err.code === 'unprocessable'
      ? err
      : broken('decryption failed');
  }
  try {
    const env = JSON.parse(plain.toString('utf8')) as Record<string, unknown>;
    const bound =
      env.v === 1 &&
      env.exchangeId === r.id &&
      env.fromTenantId === r.from_tenant_id &&
      env.toTenantId === r.to_tenant_id &&
      env.kid === r.source_kid &&
      env.version === Number(r.source_version) &&
      typeof env.material === 'string';
    if (!bound) throw broken('the payload is bound to another exchange');
    const m = deserializeMaterial(Buffer.from(env.material as string, 'base64'));
    if (m.type !== r.key_type) throw broken('the payload holds another key type');
    return m;
  } finally {
    plain.fill(0);
  }
}

function extrasOf(r: Exchange): ImportExtras {
  const chain = r.certificate_chain;
  const [issuerHex, serialHex] =
    typeof r.issuer_serial === 'string' ? r.issuer_serial.split(':') : [];
  return {
    ...(chain ? { certificateChain: chain.map((c) => Buffer.from(c, 'base64')) } : {}),
    ...(issuerHex && serialHex
      ? { issuerDer: Buffer.from(issuerHex, 'hex'), serialNumber: Buffer.from(serialHex, 'hex') }
      : {}),
    ...(r.subject_key_id ? { subjectKeyIdentifier: Buffer.from(r.subject_key_id, 'hex') } : {}),
  };
}

/** The problem for an offer whose source key is no longer active: nothing is delivered. */
function sourceUnusable(r: Exchange, state: string | undefined): AppError {
  const what = state ?? 'deleted';
  return problem(
    state === 'suspended' ? 'key_suspended' : 'key_revoked',
    `the offered key ${r.source_kid} is ${what} in the offering tenant; exchange ${r.id} delivers nothing`,
    { details: { kid: r.source_kid, state: what } },
  );
}

/** Tenant B accepts: the key is created in B (policy and kid rules of B apply) in one transaction with the state change. */
export async function acceptExchange(
  ctx: AppContext,
  tenantId: string,
  id: string,
  actor: string,
  body: { kid?: string },
): Promise<{ exchange: ExchangeView; key: KeyView }> {
  await sweepExpired(ctx);
  const r = await findExchange(ctx, tenantId, id);
  requireSide(r, tenantId, 'to', 'accept');
  assertPending(r);
  const wanted = await checkNewKey(ctx, tenantId, {
    type: r.key_type,
    usage: r.usage,
    kid: body.kid ?? `exchange-${r.id}`,
  });
  const material =
    r.mode === 'public'
      ? deserializeMaterial(Buffer.from(r.payload ?? '', 'base64'))
      : await unwrap(ctx, r);
  // Load it once as the hot path would, so a material that cannot serve its usage is refused here.
  loadKeyVersion(material, { kid: wanted.kid, version: 1, usage: r.usage as KeyUsage });
  const decidedAt = new Date();
  const { key, updated } = await ctx.db.transaction(async (trx) => {
    // The source key is re-read under its row lock, taken before the offer row as a lifecycle
    // change takes them: a revocation or suspension either committed first (and cancelled the
    // offer, or left a pre-existing one that this refuses) or waits until the key is delivered.
    const source = await trx('keys')
      .where({ tenant_id: r.from_tenant_id, kid: r.source_kid })
      .forUpdate()
      .first('state');
    if (source?.state !== 'active') throw sourceUnusable(r, source?.state);
    const [row] = await Exchange.query(trx)
      .where({ id: r.id, state: 'pending' })
      .andWhere('expires_at', '>', decidedAt)
      .patch({
        state: 'accepted',
        accepted_kid: wanted.kid,
        payload: null,
        decided_by: actor,
        decided_at: decidedAt,
      })
      .returning('*');
    if (!row) await lostRace(trx, r.id);
    const view = await storeKey(
      ctx,
      tenantId,
      { kid: wanted.kid, type: r.key_type as KeyType, usage: r.usage, source: 'exchange' },
      material,
      extrasOf(r),
      trx,
    );
    return { key: view, updated: row };
  });
  auditBoth(ctx, updated, actor, 'cryptographicexchange.accept', { to: { acceptedKid: key.kid } });
  ctx.audit.record({
    tenantId,
    actor,
    action: 'key.create',
    outcome: 'success',
    target: key.kid,
    details: { type: key.type, usage: key.usage, source: 'exchange', exchangeId: r.id },
  });
  return { exchange: exchangeView(updated, tenantId), key };
}

/** B rejects or A cancels a pending offer; the payload is dropped. */
export async function closeExchange(
  ctx: AppContext,
  tenantId: string,
  id: string,
  actor: string,
  action: 'reject' | 'cancel',
  body: { reason?: string },
): Promise<ExchangeView> {
  await sweepExpired(ctx);
  const r = await findExchange(ctx, tenantId, id);
  requireSide(r, tenantId, action === 'reject' ? 'to' : 'from', action);
  assertPending(r);
  const reason = body.reason?.slice(0, 200);
  const state = action === 'reject' ? 'rejected' : 'cancelled';
  const [row] = await Exchange.query(ctx.db)
    .where({ id: r.id, state: 'pending' })
    .patch({ state, payload: null, decided_by: actor, decided_at: new Date() })
    .returning('*');
  if (!row) await lostRace(ctx.db, r.id);
  auditBoth(
    ctx,
    row,
    actor,
    `cryptographicexchange.${action}`,
    reason ? { from: { reason }, to: { reason } } : {},
  );
  return exchangeView(row, tenantId);
}
