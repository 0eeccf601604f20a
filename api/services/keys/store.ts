/**
 * The key store: creation (generated or imported material), versions, lifecycle changes and
 * metadata views. Material is sealed under the master key bound to tenant, kid and version
 * and never leaves this module in the clear except as loaded KeyObjects for the key cache.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import {
  isKeyType,
  keyTypeSpec,
  resolveUsage,
  type KeyType,
  type KeyUsage,
} from '../../../shared/crypto/registry.ts';
import {
  allowedUsagesOf,
  enabledUsages,
  jwkForUsages,
  usageColumns,
} from '../../../shared/keys/usages.ts';
import {
  deserializeMaterial,
  generateKeyMaterial,
  loadKeyObjects,
  publicJwk,
  serializeMaterial,
  type KeyMaterial,
} from '../../../shared/crypto/material.ts';
import { tenantPolicy } from '../policies.ts';
import {
  keyNotFound,
  nextState,
  type KeyAction,
  type KeyState,
  unusable,
} from '../../../shared/keys/lifecycle.ts';
import { findKeyRow, issuerSerialKey, keyRow } from '../../../shared/keys/lookup.ts';
import { KeyVersion } from '../../../shared/db/models/keys.ts';
import { versionedKid } from '../../../shared/jose/kid.ts';
import { withdrawOffersOf } from '../exchange-events.ts';
import { destroyIfDue, pendingDeletion } from './deletion.ts';
import {
  afterDays,
  readDescription,
  readRotationPeriod,
  rotates,
  settingsView,
} from './settings.ts';

/** The kid rule for every key, generated or imported (shared/ids.ts). */
import { KID } from '../../../shared/ids.ts';
import { summarizeCertificate } from '../../../shared/keystore/certificate.ts';
import type { CertificateSummary } from '../../../shared/keystore/types.ts';
import { SYSTEM_ACTOR } from '../../../shared/audit/actor.ts';
import { WORK_COSTS } from '../../../shared/keys/work-budget.ts';
import type { KeySettingsView, KeyView } from '../../schemas/keys.ts';
export { KID };

/** What an imported version may carry besides its material. */
export interface ImportExtras {
  certificateChain?: Buffer[];
  issuerDer?: Buffer;
  serialNumber?: Buffer;
  subjectKeyIdentifier?: Buffer;
}

/** The version members keyView shows: the public JWK as the KeyVersion model parses it. */
export type VersionView = Pick<KeyVersion, 'version' | 'public_jwk'>;

/** The metadata of a key row, with its version's public JWK when given. */
export function keyView(row: Record<string, unknown>, version?: VersionView): KeyView {
  const jwk = version?.public_jwk ?? undefined;
  const usages = enabledUsages(row);
  return {
    kid: row.kid as string,
    type: row.type as string,
    usage: row.usage as KeyView['usage'],
    usages,
    allowedUsages: allowedUsagesOf(row),
    state: row.state as KeyState,
    ...(row.deletion_at ? { deletionDate: new Date(row.deletion_at as string).toISOString() } : {}),
    currentVersion: Number(row.current_version),
    source: row.source as KeyView['source'],
    createdAt: new Date(row.created_at as string).toISOString(),
    updatedAt: new Date(row.updated_at as string).toISOString(),
    // The JWK names its version, `<kid>#<version>`, also for rows stored with the bare kid.
    ...(jwk && version
      ? {
          publicKey: {
            ...(isKeyType(row.type) ? jwkForUsages(row.type, usages, jwk) : jwk),
            kid: versionedKid(row.kid as string, version.version),
          },
        }
      : {}),
  };
}

/**
 * Fresh material of `type`. RSA of every size, SLH-DSA and the other slow kinds take tens to
 * thousands of ms: expensive work, on its pool and (for a named caller) its budget; system work
 * (scheduled rotations) spends none. The rest is generated here.
 */
async function makeMaterial(
  ctx: AppContext,
  type: KeyType,
  principal?: string,
): Promise<KeyMaterial> {
  const spec = keyTypeSpec(type);
  if (spec.slowGeneration || spec.family === 'rsa') {
    const cost = spec.family === 'rsa' ? WORK_COSTS.rsa(spec.bits) : WORK_COSTS.slow;
    const order = { principal: principal ?? '', kind: 'key-generation' as const, cost };
    const bytes = await ctx.expensive.run<Uint8Array>('generateKey', { type }, order);
    return deserializeMaterial(bytes);
  }
  return generateKeyMaterial(type);
}

async function insertVersion(
  ctx: AppContext,
  trx: Knex,
  tenantId: string,
  keyId: string,
  kid: string,
  version: number,
  material: KeyMaterial,
  usage: KeyUsage | readonly KeyUsage[],
  extras: ImportExtras = {},
): Promise<void> {
  // Every new version (generated, imported, exchanged, rotated) is loaded as the hot path will
  // load it, so material a load refuses (a mislabelled type, an RSA exponent like e = 1) is
  // refused here and never stored.
  const loaded = loadKeyObjects(material);
  const sealed = ctx.masterKey.seal(serializeMaterial(material), { tenantId, kid, version });
  const jwk =
    material.publicKeyDer || material.components ? publicJwk(loaded, { kid, usage }) : null;
  await trx('key_versions').insert({
    id: randomUUID(),
    key_id: keyId,
    version,
    material: sealed,
    public_jwk: jwk ? JSON.stringify(jwk) : null,
    certificate_chain: extras.certificateChain
      ? JSON.stringify(extras.certificateChain.map((c) => c.toString('base64')))
      : null,
    issuer_serial:
      extras.issuerDer && extras.serialNumber
        ? issuerSerialKey(extras.issuerDer, extras.serialNumber)
        : null,
    subject_key_id: extras.subjectKeyIdentifier
      ? extras.subjectKeyIdentifier.toString('hex')
      : null,
  });
}

/** Validates type, usage and kid against the catalogue and the tenant's effective policy (whose rotation period it answers too). */
export async function checkNewKey(
  ctx: AppContext,
  tenantId: string,
  input: { type: string; usage?: string; kid?: string },
): Promise<{ type: KeyType; usage: string; kid: string; policyPeriodDays: number }> {
  if (!isKeyType(input.type))
    throw problem(
      'validation_failed',
      `type must be a supported key type, got ${input.type.slice(0, 40)}`,
    );
  const usage = resolveUsage(input.type, input.usage);
  const { effective } = await tenantPolicy(ctx, tenantId);
  if (!effective.allowedKeyTypes.includes(input.type)) {
    throw problem(
      'policy_violation',
      `the effective policy of this tenant does not allow ${input.type} keys`,
      { details: { allowedKeyTypes: effective.allowedKeyTypes } },
    );
  }
  const kid = input.kid ?? `key-${randomUUID()}`;
  if (!KID.test(kid))
    throw problem('validation_failed', 'kid must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
  if (await findKeyRow(ctx.db, tenantId, kid))
    throw problem('conflict', `a key with kid ${kid} exists in this tenant`);
  return { type: input.type, usage, kid, policyPeriodDays: effective.rotationPeriodDays };
}

/** A key record of the Admin API: metadata and settings. */
export type KeyRecord = KeyView & KeySettingsView;

/**
 * Creates a key with freshly generated material (version 1); description and rotationPeriodDays
 * are optional settings. `principal` (the caller's audit actor) pays the generation from its
 * budget of expensive work. `alsoWrite` writes what belongs with the key (its AWS tags) in the
 * same transaction, so either both are stored or neither.
 */
export async function createKey(
  ctx: AppContext,
  tenantId: string,
  input: {
    type: string;
    usage?: string;
    kid?: string;
    description?: string | null;
    rotationPeriodDays?: number | null;
  },
  principal?: string,
  alsoWrite?: (trx: Knex, kid: string) => Promise<void>,
): Promise<KeyRecord> {
  const description = input.description === undefined ? null : readDescription(input.description);
  const rotationPeriodDays =
    input.rotationPeriodDays === undefined ? null : readRotationPeriod(input.rotationPeriodDays);
  const { type, usage, kid, policyPeriodDays } = await checkNewKey(ctx, tenantId, input);
  const material = await makeMaterial(ctx, type, principal);
  const meta = {
    kid,
    type,
    usage,
    source: 'generated',
    description,
    rotationPeriodDays,
    policyPeriodDays,
  };
  if (!alsoWrite) return storeKey(ctx, tenantId, meta, material);
  return ctx.db.transaction(async (trx) => {
    const record = await storeKey(ctx, tenantId, meta, material, undefined, trx);
    await alsoWrite(trx, record.kid);
    return record;
  });
}

/** What storeKey records besides the material; a generated key with policyPeriodDays is scheduled for rotation at once. */
export interface NewKeyMeta {
  kid: string;
  type: string;
  usage: string;
  /** The enabled and allowed usages (shared/keys/usages.ts); both default to `[usage]`. */
  usages?: readonly KeyUsage[];
  allowedUsages?: readonly KeyUsage[];
  source: string;
  description?: string | null;
  rotationPeriodDays?: number | null;
  policyPeriodDays?: number;
  /** A verify-only certificate that `verify: "chain"` validates to. */
  trustAnchor?: boolean;
}

/** Stores a new key with the given material as version 1, atomically. */
export async function storeKey(
  ctx: AppContext,
  tenantId: string,
  meta: NewKeyMeta,
  material: KeyMaterial,
  extras?: ImportExtras,
  trx?: Knex,
): Promise<KeyRecord> {
  const id = randomUUID();
  const now = new Date();
  const period = meta.rotationPeriodDays ?? meta.policyPeriodDays;
  const row = {
    id,
    tenant_id: tenantId,
    kid: meta.kid,
    type: meta.type,
    ...usageColumns(
      meta.type as KeyType,
      meta.usages ?? [meta.usage as KeyUsage],
      meta.allowedUsages ?? meta.usages ?? [meta.usage as KeyUsage],
    ),
    state: 'active',
    current_version: 1,
    source: meta.source,
    created_at: now,
    updated_at: now,
    description: meta.description ?? null,
    rotation_period_days: meta.rotationPeriodDays ?? null,
    min_decryption_version: 1,
    trust_anchor: meta.trustAnchor === true,
    archive_signing: false,
    // Without a known period the scheduler gives the key its schedule on its next pass.
    next_rotation_at:
      meta.source === 'generated' && period !== undefined ? afterDays(now, period) : null,
  };
  const write = async (t: Knex) => {
    await t('keys').insert(row);
    await insertVersion(ctx, t, tenantId, id, meta.kid, 1, material, enabledUsages(row), extras);
    // A new key is a change too: every instance forgets what it recalled of the tenant's keys
    // (a kid or a certificate found missing a moment ago), once the key is committed.
    const announce = await ctx.keys.changedIn(t, tenantId, meta.kid);
    const committed =
      'executionPromise' in t ? (t as Knex.Transaction).executionPromise : Promise.resolve();
    void committed.then(announce, () => {});
  };
  try {
    if (trx) await write(trx);
    else await ctx.db.transaction(write);
  } catch (err) {
    if (/unique|duplicate/i.test((err as Error).message))
      throw problem('conflict', `a key with kid ${meta.kid} exists in this tenant`);
    throw err;
  }
  const version = await KeyVersion.query(trx ?? ctx.db).findOne({ key_id: id, version: 1 });
  return { ...keyView(row, version), ...settingsView(row, meta.policyPeriodDays ?? null) };
}

/** The key record of a row: metadata plus settings under the tenant's effective policy. */
export async function keyRecord(
  ctx: AppContext,
  row: Record<string, unknown>,
  version?: VersionView,
): Promise<KeyRecord> {
  const { effective } = await tenantPolicy(ctx, row.tenant_id as string);
  return { ...keyView(row, version), ...settingsView(row, effective.rotationPeriodDays) };
}

/** Metadata and settings of one key with its current version's public key and certificate summary. */
export async function readKey(
  ctx: AppContext,
  tenantId: string,
  kid: string,
): Promise<
  KeyRecord & {
    versions: Array<{
      version: number;
      createdAt: string;
      hasCertificate: boolean;
      certificate: CertificateSummary | null;
    }>;
  }
> {
  const row = await keyRow(ctx.db, tenantId, kid);
  const versions = await KeyVersion.query(ctx.db)
    .where({ key_id: row.id })
    .orderBy('version', 'asc')
    .select('version', 'created_at', 'public_jwk', 'certificate_chain');
  const current = versions.find((v) => v.version === row.current_version);
  return {
    ...(await keyRecord(ctx, row, current)),
    versions: versions.map((v) => ({
      version: v.version,
      createdAt: new Date(v.created_at).toISOString(),
      hasCertificate: Boolean(v.certificate_chain),
      certificate: leafSummary(v.certificate_chain),
    })),
  };
}

/** Subject, issuer, serial and validity of a stored chain's first certificate (the key's own). */
function leafSummary(chain: unknown): CertificateSummary | null {
  const leaf = Array.isArray(chain) ? chain[0] : undefined;
  if (typeof leaf !== 'string') return null;
  try {
    const c = summarizeCertificate(Buffer.from(leaf, 'base64'));
    return {
      subject: c.subject,
      issuer: c.issuer,
      serialNumber: c.serialNumber,
      notBefore: c.notBefore,
      notAfter: c.notAfter,
    };
  } catch {
    // Stored at import, where it parsed: unreadable now means nothing to show, not a failure.
    return null;
  }
}

/**
 * Applies a lifecycle action (suspend, resume, revoke, archive, rotate) under a row lock; a key
 * leaving the active state withdraws its pending exchange offers in the same transaction. A
 * pending deletion ends with the suspension it rides on: resume cancels it, revoke settles it
 * (docs/aws-kms.md, "Key states").
 */
export async function changeKey(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  action: KeyAction,
  actor: string,
  opts: { refusePending?: boolean } = {},
): Promise<KeyRecord> {
  return (await applyChange(ctx, tenantId, kid, action, { ...opts, actor }))!;
}

/**
 * Rotates a key only if it is still due at `now`, under its row lock: of any number of
 * schedulers that saw it due, the first rotates it and moves next_rotation_at on; the others
 * then read the moved schedule and answer null (a key due is rotated once, by one instance).
 */
export function rotateIfDue(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  now: Date,
): Promise<KeyRecord | null> {
  return applyChange(ctx, tenantId, kid, 'rotate', { actor: SYSTEM_ACTOR, dueBy: now });
}

async function applyChange(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  action: KeyAction,
  opts: { actor: string; dueBy?: Date; afterDestroy?: boolean; refusePending?: boolean },
): Promise<KeyRecord | null> {
  const { dueBy } = opts;
  const material =
    action === 'rotate'
      ? await makeMaterial(
          ctx,
          (await keyRow(ctx.db, tenantId, kid)).type as KeyType,
          opts.actor === SYSTEM_ACTOR ? undefined : opts.actor,
        )
      : null;
  const { effective } = await tenantPolicy(ctx, tenantId);
  const done = await ctx.db.transaction(async (trx) => {
    const row = await trx('keys').where({ tenant_id: tenantId, kid }).forUpdate().first();
    if (!row) throw keyNotFound(kid);
    // A deletion whose date has come is no longer the key's to cancel or settle: the key is
    // destroyed first (deletion.ts, its own lock and audit), as the sweep would have done, and
    // the action then meets the archived key.
    if (
      !opts.afterDestroy &&
      pendingDeletion(row) &&
      new Date(row.deletion_at as string) <= new Date()
    )
      return { due: true as const };
    // Decided here, under the lock: a caller that read the key before a deletion was scheduled
    // (AWS EnableKey) must not cancel that deletion with its resume.
    if (opts.refusePending && pendingDeletion(row))
      throw unusable(kid, row.state, new Date(row.deletion_at as string));
    if (
      dueBy &&
      (row.state !== 'active' ||
        !rotates(row) ||
        row.next_rotation_at === null ||
        new Date(row.next_rotation_at) > dueBy)
    )
      return null;
    if (action === 'rotate' && row.source !== 'generated')
      throw problem(
        'invalid_transition',
        `key ${kid} was imported; import its new material instead of rotating`,
      );
    const state = nextState(kid, row.state, action);
    const version = action === 'rotate' ? row.current_version + 1 : row.current_version;
    if (material)
      await insertVersion(ctx, trx, tenantId, row.id, kid, version, material, enabledUsages(row));
    const now = new Date();
    // A rotation, manual or scheduled, starts the next period.
    const schedule =
      action === 'rotate'
        ? {
            last_rotated_at: now,
            next_rotation_at: afterDays(
              now,
              row.rotation_period_days ?? effective.rotationPeriodDays,
            ),
          }
        : {};
    const deletion =
      state === 'suspended'
        ? {}
        : { deletion_at: null, deletion_requested_at: null, deletion_requested_by: null };
    const [updated] = await trx('keys')
      .where({ id: row.id })
      .update({ state, current_version: version, updated_at: now, ...schedule, ...deletion })
      .returning('*');
    const current = await KeyVersion.query(trx).findOne({ key_id: row.id, version });
    const announce = await ctx.keys.changedIn(trx, tenantId, kid);
    // The offer row is written after the key row, as acceptance locks them (exchanges.ts).
    const audit =
      state === 'active'
        ? undefined
        : await withdrawOffersOf(ctx, trx, { tenantId, kid, keyState: state, actor: opts.actor });
    return {
      audit,
      view: {
        ...keyView(updated, current),
        ...settingsView(updated, effective.rotationPeriodDays),
      },
      announce,
    };
  });
  if (done && 'due' in done) {
    await destroyIfDue(ctx, tenantId, kid);
    return applyChange(ctx, tenantId, kid, action, { ...opts, afterDestroy: true });
  }
  done?.announce();
  done?.audit?.();
  return done?.view ?? null;
}
