/**
 * The AWS KMS control plane (contract 10) over Keyward's key store and lifecycle: describe, list,
 * create, aliases, tags and scheduled deletion (rotation: rotation.ts). AWS's
 * key states map onto Keyward's: Enabled = active, Disabled = suspended, PendingDeletion =
 * suspended with a row in key_deletions (its window 7 to 30 days); at the end of the window the
 * key is revoked and archived (destroyed for every operation) and answers NotFoundException.
 */
import type { AppContext } from '../../context.ts';
import { aliasesChanged } from './aliases.ts';
import { AppError } from '../../../shared/errors/index.ts';
import { findKeyRow, keysQuery, keyRow } from '../../../shared/keys/lookup.ts';
import { changeKey, createKey } from '../keys/store.ts';
import { operationKey } from '../crypto/runtime.ts';
import { AwsError, keyNotFound } from './errors.ts';
import { ALIAS_NAME, accountOf, aliasArn, keyArn, resolveKeyId, type AwsCaller } from './ids.ts';
import { KEY_SPECS, KEY_USAGES, algorithmsOf, awsKeySpec, awsKeyUsage } from './specs.ts';
import { keyTypeSpec } from '../../../shared/crypto/registry.ts';

type Input = Record<string, unknown>;
type Answer = Promise<Record<string, unknown>>;
type Row = Record<string, unknown>;

const DAY_MS = 86_400_000;
export const epoch = (v: unknown) => Math.floor(new Date(v as string).getTime() / 1000);

/** Revokes and archives the tenant's keys whose deletion window has ended (run before reading them). */
async function destroyDue(ctx: AppContext, tenantId: string, actor: string): Promise<void> {
  const due = await ctx
    .db('key_deletions as d')
    .join('keys as k', function on() {
      this.on('k.tenant_id', '=', 'd.tenant_id').andOn('k.kid', '=', 'd.kid');
    })
    .where('d.tenant_id', tenantId)
    .andWhere('d.delete_at', '<=', new Date())
    .whereNot('k.state', 'archived')
    .select('d.kid', 'k.state');
  for (const { kid, state } of due) {
    if (state !== 'revoked') await changeKey(ctx, tenantId, kid, 'revoke', actor);
    await changeKey(ctx, tenantId, kid, 'archive', actor);
    const names = (
      await ctx.db('key_aliases').where({ tenant_id: tenantId, kid }).delete().returning('name')
    ).map((r: { name: string }) => r.name);
    await aliasesChanged(ctx, tenantId, names);
  }
}

/** The key row a KeyId names; NotFoundException also for a key destroyed by a deletion. */
export async function keyOf(ctx: AppContext, c: AwsCaller, input: Input, actor: string) {
  const kid = await resolveKeyId(ctx, c, input.KeyId);
  await destroyDue(ctx, c.tenantId, actor);
  let row: Row;
  try {
    row = await keyRow(ctx.db, c.tenantId, kid);
  } catch {
    throw keyNotFound(String(input.KeyId));
  }
  const deletion = await ctx.db('key_deletions').where({ tenant_id: c.tenantId, kid }).first();
  if (deletion && row.state === 'archived') throw keyNotFound(String(input.KeyId));
  return { kid, row, deletion: deletion as Row | undefined };
}

export function keyState(row: Row, deletion: Row | undefined): string {
  if (deletion) return 'PendingDeletion';
  if (row.state === 'active') return 'Enabled';
  if (row.state === 'suspended') return 'Disabled';
  return 'Unavailable';
}

function metadata(c: AwsCaller, row: Row, deletion: Row | undefined): Record<string, unknown> {
  const spec = awsKeySpec(row.type as string);
  return {
    AWSAccountId: accountOf(c.tenantId),
    KeyId: row.kid,
    Arn: keyArn(c, row.kid as string),
    CreationDate: epoch(row.created_at),
    Enabled: row.state === 'active',
    Description: (row.description as string | null) ?? '',
    KeyUsage: awsKeyUsage(row.usage as string),
    KeyState: keyState(row, deletion),
    ...(deletion
      ? {
          DeletionDate: epoch(deletion.delete_at),
          PendingDeletionWindowInDays: Math.round(
            (new Date(deletion.delete_at as string).getTime() -
              new Date(deletion.requested_at as string).getTime()) /
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
  const { kid, row, deletion } = await keyOf(ctx, c, input, actor);
  return { kid, KeyMetadata: metadata(c, row, deletion) };
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

/** ListKeys: the tenant's keys but the archived ones. */
export async function listKeys(ctx: AppContext, c: AwsCaller, input: Input, actor: string): Answer {
  const { limit, offset } = paging(input);
  await destroyDue(ctx, c.tenantId, actor);
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

/** CreateAlias: `alias/<name>` → a key of the tenant; AlreadyExistsException for a taken name. */
export async function createAlias(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const name = input.AliasName;
  if (typeof name !== 'string' || !ALIAS_NAME.test(name) || name.startsWith('alias/aws/'))
    throw new AwsError(
      'ValidationException',
      'AliasName must be alias/ followed by 1 to 250 of A-Z a-z 0-9 / _ -, not alias/aws/',
    );
  const { kid } = await keyOf(ctx, c, { KeyId: input.TargetKeyId }, actor);
  try {
    await ctx
      .db('key_aliases')
      .insert({ tenant_id: c.tenantId, name, kid, created_at: new Date() });
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

/** CreateKey: a generated key of KeySpec and KeyUsage, with its Description and Tags. */
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
  const tags = readTags(input.Tags, false);
  let record;
  try {
    record = await createKey(
      ctx,
      c.tenantId,
      {
        type,
        usage,
        ...(input.Description !== undefined && input.Description !== ''
          ? { description: input.Description }
          : {}),
      },
      actor,
    );
  } catch (err) {
    // A usage the type does not have (an AES key that signs) is AWS's ValidationException too.
    if (err instanceof AppError && err.code === 'key_usage_mismatch')
      throw new AwsError('ValidationException', err.message);
    throw err;
  }
  await writeTags(ctx, c.tenantId, record.kid, tags);
  const row = await keyRow(ctx.db, c.tenantId, record.kid);
  return { kid: record.kid, KeyMetadata: metadata(c, row, undefined) };
}

/** ScheduleKeyDeletion: suspends the key and records its window (7 to 30 days, default 30). */
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
  const { kid, row, deletion } = await keyOf(ctx, c, input, actor);
  if (deletion) throw new AwsError('KMSInvalidStateException', `Key ${kid} is pending deletion.`);
  if (row.state !== 'active' && row.state !== 'suspended')
    throw new AwsError('KMSInvalidStateException', `Key ${kid} is ${keyState(row, deletion)}`);
  const now = new Date();
  const deleteAt = new Date(now.getTime() + (days as number) * DAY_MS);
  await ctx
    .db('key_deletions')
    .insert({ tenant_id: c.tenantId, kid, delete_at: deleteAt, requested_at: now });
  if (row.state === 'active') await changeKey(ctx, c.tenantId, kid, 'suspend', actor);
  return {
    kid,
    KeyId: keyArn(c, kid),
    DeletionDate: epoch(deleteAt),
    KeyState: 'PendingDeletion',
    PendingWindowInDays: days,
  };
}

/** CancelKeyDeletion: the key returns Disabled (as in AWS); EnableKey would make it usable. */
export async function cancelKeyDeletion(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { kid, deletion } = await keyOf(ctx, c, input, actor);
  if (!deletion)
    throw new AwsError('KMSInvalidStateException', `Key ${kid} is not pending deletion.`);
  await ctx.db('key_deletions').where({ tenant_id: c.tenantId, kid }).delete();
  return { kid, KeyId: keyArn(c, kid) };
}

/** Tags as AWS gives them: `[{TagKey, TagValue}]`, keys 1 to 128, values 0 to 256 characters. */
function readTags(v: unknown, required: boolean): Array<[string, string]> {
  if (v === undefined && !required) return [];
  if (!Array.isArray(v) || v.length > 50)
    throw new AwsError(
      'ValidationException',
      'Tags must be a list of at most 50 {TagKey, TagValue}',
    );
  return v.map((t) => {
    const k = (t as Row)?.TagKey;
    const val = (t as Row)?.TagValue;
    if (
      typeof k !== 'string' ||
      k.length < 1 ||
      k.length > 128 ||
      typeof val !== 'string' ||
      val.length > 256
    )
      throw new AwsError(
        'TagException',
        'Each tag needs a TagKey of 1 to 128 and a TagValue of 0 to 256 characters',
      );
    return [k, val];
  });
}

async function writeTags(
  ctx: AppContext,
  tenantId: string,
  kid: string,
  tags: Array<[string, string]>,
) {
  for (const [tag_key, tag_value] of tags)
    await ctx
      .db('key_tags')
      .insert({ tenant_id: tenantId, kid, tag_key, tag_value })
      .onConflict(['tenant_id', 'kid', 'tag_key'])
      .merge(['tag_value']);
}

/** TagResource: adds or replaces tags. */
export async function tagResource(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const tags = readTags(input.Tags, true);
  const { kid } = await keyOf(ctx, c, input, actor);
  await writeTags(ctx, c.tenantId, kid, tags);
  return { kid };
}

/** UntagResource: removes tags by key. */
export async function untagResource(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const keys = input.TagKeys;
  if (!Array.isArray(keys) || keys.length > 50 || !keys.every((k) => typeof k === 'string'))
    throw new AwsError('ValidationException', 'TagKeys must be a list of at most 50 strings');
  const { kid } = await keyOf(ctx, c, input, actor);
  await ctx.db('key_tags').where({ tenant_id: c.tenantId, kid }).whereIn('tag_key', keys).delete();
  return { kid };
}

/** ListResourceTags. */
export async function listResourceTags(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { limit, offset } = paging(input);
  const { kid } = await keyOf(ctx, c, input, actor);
  const rows = await ctx
    .db('key_tags')
    .where({ tenant_id: c.tenantId, kid })
    .orderBy('tag_key', 'asc')
    .offset(offset)
    .limit(limit + 1);
  return {
    kid,
    ...paged(
      rows.map((r: Row) => ({ TagKey: r.tag_key, TagValue: r.tag_value })),
      limit,
      offset,
      'Tags',
    ),
  };
}
