/**
 * AWS KMS tags on a key (docs/aws-kms.md): TagResource, UntagResource and ListResourceTags, and
 * the reading and writing CreateKey shares. AWS's quota of 50 tags a key holds under the key's
 * row lock, so two concurrent calls cannot together pass it.
 */
import type { Knex } from 'knex';
import type { AppContext } from '../../context.ts';
import { AwsError } from './errors.ts';
import type { AwsCaller } from './ids.ts';
import {
  keyOf,
  paged,
  paging,
  refusePending,
  text,
  whileKeyLive,
  type Answer,
  type Input,
  type Row,
} from './key-access.ts';

/** Tags one key may hold (AWS KMS's quota). */
const MAX_TAGS_PER_KEY = 50;

/**
 * Tags as AWS gives them: `[{TagKey, TagValue}]`, keys 1 to 128, values 0 to 256 characters, of
 * text the database can hold (TagException otherwise).
 */
export function readTags(v: unknown, required: boolean): Array<[string, string]> {
  if (v === undefined && !required) return [];
  if (!Array.isArray(v))
    throw new AwsError('ValidationException', 'Tags must be a list of {TagKey, TagValue}');
  if (v.length > MAX_TAGS_PER_KEY)
    throw new AwsError('TagException', `A key holds at most ${MAX_TAGS_PER_KEY} tags`);
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
    return [text(k, 'TagKey', 'TagException'), text(val, 'TagValue', 'TagException')];
  });
}

export async function writeTags(
  db: Knex,
  tenantId: string,
  kid: string,
  tags: Array<[string, string]>,
) {
  if (tags.length === 0) return;
  // One row per TagKey, the last value winning: one statement may not update a row twice.
  const rows = [...new Map(tags)].map(([tag_key, tag_value]) => ({
    tenant_id: tenantId,
    kid,
    tag_key,
    tag_value,
  }));
  await db('key_tags')
    .insert(rows)
    .onConflict(['tenant_id', 'kid', 'tag_key'])
    .merge(['tag_value']);
}

/**
 * LimitExceededException, as AWS answers, when the key's tags and the new ones (a TagKey the key
 * holds is replaced, not added) would be more than MAX_TAGS_PER_KEY.
 */
async function withinTagQuota(
  db: Knex,
  tenantId: string,
  kid: string,
  tags: Array<[string, string]>,
): Promise<void> {
  const held = await db('key_tags').where({ tenant_id: tenantId, kid }).pluck('tag_key');
  const after = new Set<string>([...held, ...tags.map(([k]) => k)]);
  if (after.size > MAX_TAGS_PER_KEY)
    throw new AwsError(
      'LimitExceededException',
      `A key holds at most ${MAX_TAGS_PER_KEY} tags; this one holds ${held.length}`,
    );
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
  // The quota check and the write in one transaction, the key's row locked, so two concurrent
  // TagResource calls cannot together pass the quota.
  await whileKeyLive(ctx, c, kid, input.KeyId, async (trx) => {
    await withinTagQuota(trx, c.tenantId, kid, tags);
    await writeTags(trx, c.tenantId, kid, tags);
  });
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
  for (const k of keys) text(k, 'TagKey', 'TagException');
  const { kid, row } = await keyOf(ctx, c, input, actor);
  refusePending(c, kid, row);
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
