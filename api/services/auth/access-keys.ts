/**
 * Workload access keys (docs/aws-kms.md): the AWS-style credential pair a workload signs
 * AWS KMS API requests with (SigV4). SigV4 is an HMAC keyed by the secret itself, so unlike a
 * client secret it cannot be kept as a hash: it is sealed under the master key as key material
 * is (AES-256-GCM, bound to tenant and access key id) and shown once, at creation.
 *
 * The hot path resolves an access key id to its workload through a small cache. Revoking a key,
 * or disabling, deleting or re-roling its workload, records a `client` change for the workload's
 * client id (the change feed every instance reads), and every instance drops that workload's
 * cached access keys; an entry is never used longer than CACHE_TTL_MS either.
 */
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { problem } from '../../../shared/errors/index.ts';
import { Role } from '../../../shared/db/models/identities.ts';
import { findWorkload } from '../admin/workloads.ts';
import { accessKeySealContext } from '../../../shared/keys/sealed-items.ts';
import { IntegrityError, UnknownKeyIdError, sealedBy } from '../../../shared/crypto/master-key.ts';
import type { AccessKeyView } from '../../schemas/workloads.ts';
import { ChangeFedCache } from '../../../shared/fanout/change-fed-cache.ts';
import type { AccessKeyHolder } from './access-key-holder.ts';

/** At most this many access keys per workload (AWS allows two per user; rotation needs room). */
const MAX_KEYS_PER_WORKLOAD = 5;
const CACHE_TTL_MS = 5_000;
/** Access keys held at most by the resolver. */
const MAX_CACHED = 10_000;
/** AWS access key ids: 20 upper-case base32 characters; Keyward's begin with KWAK. */
export const ACCESS_KEY_ID = /^KWAK[A-Z2-7]{16}$/;
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** An unopenable access key is logged at most once per key in this time. */
const UNOPENABLE_LOG_MS = 60_000;

function newAccessKeyId(): string {
  const bytes = randomBytes(16);
  let id = 'KWAK';
  for (const b of bytes) id += BASE32[b & 31];
  return id;
}

const view = (row: Record<string, unknown>): AccessKeyView => ({
  accessKeyId: row.id as string,
  workloadId: row.workload_id as string,
  createdAt: new Date(row.created_at as string).toISOString(),
});

/** Creates an access key for a workload of the tenant; the secret is answered only here. */
export async function createAccessKey(
  ctx: AppContext,
  tenantId: string,
  workloadId: string,
): Promise<AccessKeyView & { secretAccessKey: string }> {
  await findWorkload(ctx.db, tenantId, workloadId);
  const [{ count }] = await ctx
    .db('access_keys')
    .where({ workload_id: workloadId })
    .count<{ count: string | number }[]>({ count: '*' });
  if (Number(count) >= MAX_KEYS_PER_WORKLOAD)
    throw problem(
      'conflict',
      `this workload has ${MAX_KEYS_PER_WORKLOAD} access keys already; delete one first`,
    );
  const accessKeyId = newAccessKeyId();
  // 40 characters, as AWS secret access keys are; base64 of 30 random bytes.
  const secretAccessKey = randomBytes(30).toString('base64');
  const row = {
    id: accessKeyId,
    tenant_id: tenantId,
    workload_id: workloadId,
    secret: ctx.masterKey.seal(
      Buffer.from(secretAccessKey),
      accessKeySealContext(tenantId, accessKeyId),
    ),
    created_at: new Date(),
  };
  await ctx.db('access_keys').insert(row);
  return { ...view(row), secretAccessKey };
}

/** The access keys of a workload of the tenant, oldest first, without secrets. */
export async function listAccessKeys(
  ctx: AppContext,
  tenantId: string,
  workloadId: string,
): Promise<{ items: AccessKeyView[] }> {
  await findWorkload(ctx.db, tenantId, workloadId);
  const rows = await ctx
    .db('access_keys')
    .where({ tenant_id: tenantId, workload_id: workloadId })
    .orderBy('created_at', 'asc');
  return { items: rows.map(view) };
}

/** Revokes an access key on every instance (the workload's `client` change); 404 when there is none. */
export async function deleteAccessKey(
  ctx: AppContext,
  tenantId: string,
  workloadId: string,
  accessKeyId: string,
): Promise<void> {
  const workload = await findWorkload(ctx.db, tenantId, workloadId);
  const deleted = ACCESS_KEY_ID.test(accessKeyId)
    ? await ctx
        .db('access_keys')
        .where({ id: accessKeyId, tenant_id: tenantId, workload_id: workloadId })
        .delete()
    : 0;
  if (deleted === 0) throw problem('not_found', 'no such access key');
  await ctx.auth.secrets.invalidate(workload.client_id);
}

/** What the resolver of access key ids reads with. */
export type AccessKeyParts = Pick<AppContext, 'db' | 'masterKey' | 'logger' | 'changes'>;

/**
 * The process's resolver of access key ids, by id: a `client` change drops every access key of
 * that client's workload, and an entry is never used longer than CACHE_TTL_MS. The holder of an
 * id, or undefined when there is none.
 */
export function createAccessKeyResolver(ctx: AccessKeyParts): ChangeFedCache<AccessKeyHolder> {
  async function load(accessKeyId: string): Promise<AccessKeyHolder | null> {
    const row = await ctx
      .db('access_keys as k')
      .join('workloads as w', 'w.id', 'k.workload_id')
      .join('roles as r', 'r.id', 'w.role_id')
      .join('tenants as t', 't.id', 'k.tenant_id')
      .where('k.id', accessKeyId)
      .first(
        'k.id',
        'k.tenant_id',
        'k.secret',
        'w.id as workload_id',
        'w.client_id',
        'w.disabled',
        'r.permissions',
        't.status',
      );
    if (!row) return null;
    const { permissions } = Role.fromDatabaseJson({ permissions: row.permissions });
    const sealed = Buffer.from(row.secret);
    let secret: Buffer;
    try {
      secret = ctx.masterKey.open(
        sealed,
        accessKeySealContext(row.tenant_id as string, accessKeyId),
      );
    } catch (err) {
      if (!(err instanceof IntegrityError)) throw err;
      unopenable(row, sealed, err);
      return null;
    }
    return {
      accessKeyId,
      secret,
      tenantId: row.tenant_id,
      workloadId: row.workload_id,
      clientId: row.client_id,
      permissions,
      usable: !row.disabled && row.status === 'active',
      loadedAt: Date.now(),
    };
  }

  /**
   * An access key whose secret this keyring cannot open (its master key id removed too early,
   * or another key under that id): without the secret no signature can be checked, so the caller
   * is answered as for an unknown key (a client error the AWS CLI does not retry, and nothing an
   * unauthenticated caller could learn the key's existence from), and the operator is told why.
   */
  const logged = new Map<string, number>();
  function unopenable(row: Record<string, unknown>, sealed: Buffer, err: IntegrityError): void {
    const id = row.id as string;
    const now = Date.now();
    if (now - (logged.get(id) ?? -Infinity) < UNOPENABLE_LOG_MS) return;
    if (logged.size >= 1_000) logged.clear();
    logged.set(id, now);
    const keyId = sealedBy(sealed) ?? '(sealed before the keyring)';
    const held = ctx.masterKey.ids.join(', ');
    const cause =
      err instanceof UnknownKeyIdError
        ? `its secret is sealed under master key id ${err.keyId}, which this service's keyring (${held}) does not hold`
        : `its secret does not open under master key id ${keyId} of this service's keyring (${held}): another key under that id, or an altered row`;
    ctx.logger.error(
      {
        accessKeyId: id,
        tenantId: row.tenant_id,
        workloadId: row.workload_id,
        sealedUnder: keyId,
        keyring: ctx.masterKey.ids,
      },
      `AWS KMS API: access key ${id} is refused as invalid because ${cause}. Put that master key back in KEYWARD_MASTER_KEY (after the newest) and run the rewrap, or delete this access key and create a new one for workload ${String(row.workload_id)}`,
    );
  }

  return new ChangeFedCache<AccessKeyHolder>({
    feed: ctx.changes,
    kind: 'client',
    // The change names a client id; the entries are by access key id.
    names: (change, _id, holder) => holder?.clientId === change.ref,
    max: MAX_CACHED,
    ttlMs: CACHE_TTL_MS,
    async load([accessKeyId]) {
      const holder = await load(accessKeyId);
      return new Map(holder ? [[accessKeyId, holder]] : []);
    },
  });
}

/** The holder of an access key id, or null when there is none (or the id cannot be one). */
export async function accessKeyHolder(
  ctx: Pick<AppContext, 'accessKeys'>,
  accessKeyId: string,
): Promise<AccessKeyHolder | null> {
  if (!ACCESS_KEY_ID.test(accessKeyId)) return null;
  return (await ctx.accessKeys.get(accessKeyId)) ?? null;
}
