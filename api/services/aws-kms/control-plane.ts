/**
 * The AWS KMS control plane (docs/aws-kms.md) over Keyward's key store and lifecycle: describe,
 * list, create, enable and disable, aliases, descriptions and scheduled deletion (rotation:
 * rotation.ts; tags: tags.ts; the key policy and grants: key-policy.ts; what every operation on
 * a key starts from: key-access.ts). AWS key states are views of the native lifecycle, never a
 * state of their own (docs/aws-kms.md, "Key states"): Enabled = active, Disabled = suspended,
 * PendingDeletion = suspended with a deletion date (api/services/keys/deletion.ts owns it); at
 * that date the key is revoked and archived, and answers NotFoundException from then on.
 */
import type { AppContext } from '../../context.ts';
import { aliasesChanged } from './aliases.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { findKeyRow, keysQuery, keyRow } from '../../../shared/keys/lookup.ts';
import { changeKey, createKey } from '../keys/store.ts';
import { applySettings } from '../keys/settings.ts';
import { tenantPolicy } from '../policies.ts';
import { cancelDeletion, pendingDeletion, scheduleDeletion } from '../keys/deletion.ts';
import { operationKey } from '../crypto/runtime.ts';
import { AwsError, keyNotFound } from './errors.ts';
import { ALIAS_NAME, accountOf, aliasArn, keyArn, resolveKeyId, type AwsCaller } from './ids.ts';
import { KEY_SPECS, KEY_USAGES, algorithmsOf, awsKeySpec, awsKeyUsage } from './specs.ts';
import { keyTypeSpec } from '../../../shared/crypto/registry.ts';
import {
  epoch,
  keyOf,
  keyState,
  paged,
  paging,
  refusePending,
  text,
  whileKeyLive,
  type Answer,
  type Input,
  type Row,
} from './key-access.ts';
import { readTags, writeTags } from './tags.ts';

const DAY_MS = 86_400_000;
function metadata(c: AwsCaller, row: Row): Record<string, unknown> {
  const spec = awsKeySpec(row.type as string);
  const pending = pendingDeletion(row);
  return {
    AWSAccountId: accountOf(c.tenantId),
    KeyId: row.kid,
    Arn: keyArn(c, row.kid as string),
    CreationDate: epoch(row.created_at),
    Enabled: row.state === 'active',
    Description: (row.description as string | null) ?? '',
    KeyUsage: awsKeyUsage(row.usage as string),
    KeyState: keyState(row),
    ...(pending
      ? {
          DeletionDate: epoch(row.deletion_at),
          PendingDeletionWindowInDays: Math.round(
            (new Date(row.deletion_at as string).getTime() -
              new Date((row.deletion_requested_at ?? row.updated_at) as string).getTime()) /
              DAY_MS,
          ),
        }
      : {}),
    Origin: row.source === 'generated' ? 'AWS_KMS' : 'EXTERNAL',
    KeyManager: 'CUSTOMER',
    CustomerMasterKeySpec: spec,
    KeySpec: spec,
    MultiRegion: false,
    ...algorithmsOf(row.type as string, row.usage as string),
  };
}

/** DescribeKey. */
export async function describeKey(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { kid, row } = await keyOf(ctx, c, input, actor);
  return { kid, KeyMetadata: metadata(c, row) };
}

/** GetPublicKey: SPKI DER of an asymmetric key's current version. */
export async function getPublicKey(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const k = await operationKey(ctx, c.tenantId, await resolveKeyId(ctx, c, input.KeyId));
  const publicKey = k.versions.get(k.currentVersion)?.publicKey;
  if (!publicKey)
    throw new AwsError('UnsupportedOperationException', 'A symmetric key has no public key.');
  return {
    kid: k.kid,
    KeyId: keyArn(c, k.kid),
    PublicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    CustomerMasterKeySpec: awsKeySpec(k.type),
    KeySpec: awsKeySpec(k.type),
    KeyUsage: awsKeyUsage(k.usage),
    ...algorithmsOf(k.type, k.usage),
  };
}

/** ListKeys: the tenant's keys but the archived ones (a read only: it destroys nothing). */
export async function listKeys(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const { limit, offset } = paging(input);
  const rows = await keysQuery(ctx.db, c.tenantId, { exceptStates: ['archived'] })
    .orderBy('created_at', 'asc')
    .orderBy('kid', 'asc')
    .offset(offset)
    .limit(limit + 1)
    .select('kid');
  const keys = rows.map((r: Row) => ({ KeyId: r.kid, KeyArn: keyArn(c, r.kid as string) }));
  return paged(keys, limit, offset, 'Keys');
}

/** ListAliases: the tenant's aliases, or those of one key. */
export async function listAliases(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const { limit, offset } = paging(input);
  const q = ctx.db('key_aliases').where({ tenant_id: c.tenantId });
  if (input.KeyId !== undefined) {
    // As AWS: a KeyId that names no key of the account is NotFoundException, not an empty list.
    const kid = await resolveKeyId(ctx, c, input.KeyId);
    if (!(await findKeyRow(ctx.db, c.tenantId, kid))) throw keyNotFound(String(input.KeyId));
    q.andWhere({ kid });
  }
  const rows = await q
    .orderBy('name', 'asc')
    .offset(offset)
    .limit(limit + 1);
  const aliases = rows.map((r: Row) => ({
    AliasName: r.name,
    AliasArn: aliasArn(c, r.name as string),
    TargetKeyId: r.kid,
    CreationDate: epoch(r.created_at),
  }));
  return paged(aliases, limit, offset, 'Aliases');
}

/** An AliasName a caller may create or point: `alias/` and 1 to 250 characters, not AWS's own. */
function aliasToWrite(name: unknown): string {
  if (typeof name !== 'string' || !ALIAS_NAME.test(name) || name.startsWith('alias/aws/'))
    throw new AwsError(
      'ValidationException',
      'AliasName must be alias/ followed by 1 to 250 of A-Z a-z 0-9 / _ -, not alias/aws/',
    );
  return name;
}

/** CreateAlias: `alias/<name>` → a key of the tenant; AlreadyExistsException for a taken name. */
export async function createAlias(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const name = aliasToWrite(input.AliasName);
  const { kid } = await keyOf(ctx, c, { KeyId: input.TargetKeyId }, actor);
  try {
    await whileKeyLive(ctx, c, kid, input.TargetKeyId, (trx) =>
      trx('key_aliases').insert({ tenant_id: c.tenantId, name, kid, created_at: new Date() }),
    );
  } catch (err) {
    if (/unique|duplicate/i.test((err as Error).message))
      throw new AwsError('AlreadyExistsException', `An alias with the name ${name} already exists`);
    throw err;
  }
  // Instances that looked the name up while it named nothing forget that answer.
  await aliasesChanged(ctx, c.tenantId, [name]);
  return { kid };
}

/** DeleteAlias. */
export async function deleteAlias(ctx: AppContext, c: AwsCaller, input: Input): Answer {
  const name = input.AliasName;
  if (typeof name !== 'string' || !ALIAS_NAME.test(name))
    throw new AwsError('ValidationException', 'AliasName must be alias/ followed by its name');
  const deleted = await ctx.db('key_aliases').where({ tenant_id: c.tenantId, name }).delete();
  if (deleted === 0) throw new AwsError('NotFoundException', `Alias ${name} does not exist`);
  await aliasesChanged(ctx, c.tenantId, [name]);
  return {};
}

/** CreateKey: a generated key of KeySpec and KeyUsage, with its Description and Tags, in one transaction. */
export async function createKeyOp(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const type = KEY_SPECS.get(input.KeySpec ?? input.CustomerMasterKeySpec ?? 'SYMMETRIC_DEFAULT');
  if (!type) throw new AwsError('ValidationException', 'KeySpec is not one this service supports');
  const usage = KEY_USAGES.get(
    input.KeyUsage ?? (keyTypeSpec(type).mac ? 'GENERATE_VERIFY_MAC' : 'ENCRYPT_DECRYPT'),
  );
  if (!usage)
    throw new AwsError(
      'ValidationException',
      'KeyUsage must be ENCRYPT_DECRYPT, SIGN_VERIFY or GENERATE_VERIFY_MAC',
    );
  if (input.Origin !== undefined && input.Origin !== 'AWS_KMS')
    throw new AwsError('UnsupportedOperationException', 'Only Origin AWS_KMS is supported');
  // Everything is checked before anything is written: a refused tag leaves no key behind.
  const tags = readTags(input.Tags, false);
  const description = input.Description === undefined ? '' : text(input.Description, 'Description');
  let record;
  try {
    record = await createKey(
      ctx,
      c.tenantId,
      { type, usage, ...(description !== '' ? { description } : {}) },
      actor,
      (trx, kid) => writeTags(trx, c.tenantId, kid, tags),
    );
  } catch (err) {
    // A usage the type does not have (an AES key that signs) is AWS's ValidationException too.
    if (err instanceof AppError && err.code === 'key_usage_mismatch')
      throw new AwsError('ValidationException', err.message);
    throw err;
  }
  const row = await keyRow(ctx.db, c.tenantId, record.kid);
  return { kid: record.kid, KeyMetadata: metadata(c, row) };
}

/**
 * ScheduleKeyDeletion: the key's own lifecycle suspends it with a deletion date (7 to 30 days,
 * default 30); of concurrent requests, one wins and the others answer KMSInvalidStateException.
 */
export async function scheduleKeyDeletion(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const days = input.PendingWindowInDays ?? 30;
  if (!Number.isSafeInteger(days) || (days as number) < 7 || (days as number) > 30)
    throw new AwsError(
      'ValidationException',
      'PendingWindowInDays must be an integer from 7 to 30',
    );
  const { kid } = await keyOf(ctx, c, input, actor);
  const deleteAt = new Date(Date.now() + (days as number) * DAY_MS);
  const row = await scheduleDeletion(ctx, c.tenantId, kid, deleteAt, actor);
  return {
    kid,
    KeyId: keyArn(c, kid),
    DeletionDate: epoch(row.deletion_at),
    KeyState: 'PendingDeletion',
    PendingWindowInDays: days,
  };
}

/** CancelKeyDeletion: the key returns Disabled (as in AWS); EnableKey makes it usable again. */
export async function cancelKeyDeletion(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { kid } = await keyOf(ctx, c, input, actor);
  await cancelDeletion(ctx, c.tenantId, kid);
  return { kid, KeyId: keyArn(c, kid) };
}

/**
 * EnableKey: the native resume of a Disabled key; an Enabled key stays so (AWS answers success).
 * A key pending deletion is refused: CancelKeyDeletion first, as in AWS.
 */
export async function enableKey(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { kid, row } = await keyOf(ctx, c, input, actor);
  if (pendingDeletion(row))
    throw new AwsError(
      'KMSInvalidStateException',
      `Key ${keyArn(c, kid)} is pending deletion; call CancelKeyDeletion first.`,
    );
  // The lock decides again: a deletion scheduled since the read above is refused, not cancelled.
  if (row.state !== 'active')
    await changeKey(ctx, c.tenantId, kid, 'resume', actor, { refusePending: true });
  return { kid };
}

/** DisableKey: the native suspend of an Enabled key; a Disabled key stays so. */
export async function disableKey(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { kid, row } = await keyOf(ctx, c, input, actor);
  refusePending(c, kid, row);
  if (row.state !== 'suspended') await changeKey(ctx, c.tenantId, kid, 'suspend', actor);
  return { kid };
}

/** UpdateKeyDescription: the key's native description (the native text rules and bound). */
export async function updateKeyDescription(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const description = text(input.Description, 'Description');
  const { kid, row } = await keyOf(ctx, c, input, actor);
  refusePending(c, kid, row);
  await applySettings(
    ctx,
    c.tenantId,
    kid,
    { description: description === '' ? null : description },
    async (t) => (await tenantPolicy(ctx, t)).effective.rotationPeriodDays,
  );
  return { kid };
}

/**
 * UpdateAlias: points an existing alias at another key of the tenant, which must have the same
 * KeyUsage and be as symmetric as the current one (AWS's rule, so a client's calls keep working).
 */
export async function updateAlias(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const name = aliasToWrite(input.AliasName);
  const { kid, row } = await keyOf(ctx, c, { KeyId: input.TargetKeyId }, actor);
  const current = await ctx.db('key_aliases').where({ tenant_id: c.tenantId, name }).first();
  if (!current) throw new AwsError('NotFoundException', `Alias ${name} does not exist`);
  const old = await findKeyRow(ctx.db, c.tenantId, current.kid as string);
  const kindOf = (r: Row | null) =>
    r ? `${awsKeyUsage(r.usage as string)}/${keyTypeSpec(r.type as string).symmetric}` : null;
  if (old && kindOf(old) !== kindOf(row))
    throw new AwsError(
      'ValidationException',
      'The new target key must have the same KeyUsage and key type (symmetric or asymmetric) as the current one',
    );
  await whileKeyLive(ctx, c, kid, input.TargetKeyId, (trx) =>
    trx('key_aliases').where({ tenant_id: c.tenantId, name }).update({ kid }),
  );
  await aliasesChanged(ctx, c.tenantId, [name]);
  return { kid };
}
