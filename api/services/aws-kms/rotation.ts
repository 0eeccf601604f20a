/**
 * The AWS KMS rotation operations over Keyward's rotation settings and on-demand
 * rotation: GetKeyRotationStatus, Enable/DisableKeyRotation, RotateKeyOnDemand, ListKeyRotations.
 * As AWS KMS answers for asymmetric, HMAC and imported keys, only generated symmetric keys rotate.
 */
import type { AppContext } from '../../context.ts';
import { isKeyType, keyTypeSpec } from '../../../shared/crypto/registry.ts';
import { KeyVersion } from '../../../shared/db/models/keys.ts';
import { changeKey } from '../keys/store.ts';
import { applySettings, settingsView } from '../keys/settings.ts';
import { tenantPolicy } from '../policies.ts';
import { AwsError } from './errors.ts';
import { keyArn, type AwsCaller } from './ids.ts';
import { epoch, keyOf, keyState, paged, paging } from './key-access.ts';
type Input = Record<string, unknown>;
type Answer = Promise<Record<string, unknown>>;
type Row = Record<string, unknown>;

/** GetKeyRotationStatus. */
export async function getKeyRotationStatus(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { kid, row } = await keyOf(ctx, c, input, actor);
  // As AWS KMS answers for asymmetric, HMAC and imported keys: only generated symmetric keys rotate here.
  if (!rotatesInAws(row))
    throw new AwsError(
      'UnsupportedOperationException',
      'Only symmetric keys with generated material rotate.',
    );
  const { effective } = await tenantPolicy(ctx, c.tenantId);
  const s = settingsView(row, effective.rotationPeriodDays);
  return {
    kid,
    KeyId: keyArn(c, kid),
    KeyRotationEnabled: s.rotationPeriodDays !== null,
    ...(s.rotationPeriodDays !== null ? { RotationPeriodInDays: s.rotationPeriodDays } : {}),
    ...(s.nextRotationAt ? { NextRotationDate: epoch(s.nextRotationAt) } : {}),
  };
}

/** Whether a key takes part in the AWS rotation operations: generated symmetric material. */
const rotatesInAws = (row: Row) =>
  row.source === 'generated' && isKeyType(row.type) && keyTypeSpec(row.type).family === 'aes';

const policyPeriod = (ctx: AppContext) => async (t: string) =>
  (await tenantPolicy(ctx, t)).effective.rotationPeriodDays;

async function symmetricGenerated(ctx: AppContext, c: AwsCaller, input: Input, actor: string) {
  const k = await keyOf(ctx, c, input, actor);
  if (!rotatesInAws(k.row))
    throw new AwsError(
      'UnsupportedOperationException',
      'Only symmetric keys with generated material rotate.',
    );
  if (k.row.state !== 'active')
    throw new AwsError('KMSInvalidStateException', `Key ${k.kid} is ${keyState(k.row)}`);
  return k;
}

/** EnableKeyRotation: the key's own rotation period (90 to 2560 days, default 365). */
export async function enableKeyRotation(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const days = input.RotationPeriodInDays ?? 365;
  if (!Number.isSafeInteger(days) || (days as number) < 90 || (days as number) > 2560)
    throw new AwsError(
      'ValidationException',
      'RotationPeriodInDays must be an integer from 90 to 2560',
    );
  const { kid } = await symmetricGenerated(ctx, c, input, actor);
  await applySettings(
    ctx,
    c.tenantId,
    kid,
    { rotationPeriodDays: days as number },
    policyPeriod(ctx),
  );
  return { kid };
}

/** DisableKeyRotation: clears the key's own period; a tenant policy that rotates every key still does. */
export async function disableKeyRotation(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { kid } = await symmetricGenerated(ctx, c, input, actor);
  if ((await policyPeriod(ctx)(c.tenantId)) !== null)
    throw new AwsError(
      'UnsupportedOperationException',
      "The tenant's policy rotates every key; change the policy instead.",
    );
  await applySettings(ctx, c.tenantId, kid, { rotationPeriodDays: null }, policyPeriod(ctx));
  return { kid };
}

/** RotateKeyOnDemand: a new version now (the lifecycle's rotate). */
export async function rotateKeyOnDemand(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { kid } = await symmetricGenerated(ctx, c, input, actor);
  await changeKey(ctx, c.tenantId, kid, 'rotate', actor);
  return { kid, KeyId: keyArn(c, kid) };
}

/** ListKeyRotations: every version after the first, oldest first. */
export async function listKeyRotations(
  ctx: AppContext,
  c: AwsCaller,
  input: Input,
  actor: string,
): Answer {
  const { limit, offset } = paging(input);
  const { kid, row } = await keyOf(ctx, c, input, actor);
  const versions = await KeyVersion.query(ctx.db)
    .where({ key_id: row.id as string })
    .andWhere('version', '>', 1)
    .orderBy('version', 'asc')
    .offset(offset)
    .limit(limit + 1)
    .select('version', 'created_at');
  const rotations = versions.map((v) => ({
    KeyId: keyArn(c, kid),
    RotationDate: epoch(v.created_at),
    RotationType: 'ON_DEMAND',
  }));
  return { kid, ...paged(rotations, limit, offset, 'Rotations') };
}
