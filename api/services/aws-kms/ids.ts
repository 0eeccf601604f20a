/**
 * AWS names of Keyward keys: the tenant's 12-digit account, key and alias ARNs,
 * and the KeyId forms a request may use (kid, `alias/<name>`, a key or alias ARN). A KeyId of
 * another tenant, a foreign account, another region than the request's or an unknown alias is
 * NotFoundException with the same words, never a hint that it exists.
 */
import { createHash } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { KID } from '../../../shared/ids.ts';
import { AwsError, keyNotFound } from './errors.ts';
import { aliasTarget } from './aliases.ts';

/** Who a request acts for: the workload's tenant and the region its signature is scoped to. */
export interface AwsCaller {
  tenantId: string;
  region: string;
  /** True once the client has disconnected: expensive work not yet started is dropped. */
  abandoned?: () => boolean;
}

/** Account numbers by tenant id: every answer names keys by ARN, so each request needs one. */
const accounts = new Map<string, string>();
const MAX_ACCOUNTS = 10_000;

/** The tenant's AWS account number: 12 digits, stable, derived from the tenant id. */
export function accountOf(tenantId: string): string {
  let account = accounts.get(tenantId);
  if (account === undefined) {
    const digest = createHash('sha256').update(`keyward-aws-account:${tenantId}`).digest();
    account = (digest.readBigUInt64BE(0) % 10n ** 12n).toString().padStart(12, '0');
    if (accounts.size >= MAX_ACCOUNTS) accounts.clear();
    accounts.set(tenantId, account);
  }
  return account;
}

export const keyArn = (c: AwsCaller, kid: string): string =>
  `arn:aws:kms:${c.region}:${accountOf(c.tenantId)}:key/${kid}`;

export const aliasArn = (c: AwsCaller, name: string): string =>
  `arn:aws:kms:${c.region}:${accountOf(c.tenantId)}:${name}`;

/** Alias names as AWS allows them (`alias/` and 1 to 250 of A-Z a-z 0-9 / _ -), never `alias/aws/`. */
export const ALIAS_NAME = /^alias\/[A-Za-z0-9/_-]{1,250}$/;

const ARN = /^arn:aws:kms:([a-z0-9-]{1,32}):(\d{12}):(key\/.+|alias\/.+)$/;

/** The kid a KeyId names in the caller's tenant; NotFoundException for anything else. */
export async function resolveKeyId(ctx: AppContext, c: AwsCaller, keyId: unknown): Promise<string> {
  if (typeof keyId !== 'string' || keyId.length === 0 || keyId.length > 2048)
    throw new AwsError('ValidationException', 'KeyId must be a string of 1 to 2048 characters');
  let name = keyId;
  const arn = ARN.exec(keyId);
  if (arn) {
    // As AWS: an ARN names one region's key; another region's ARN names no key of this one.
    if (arn[2] !== accountOf(c.tenantId) || arn[1] !== c.region) throw keyNotFound(keyId);
    name = arn[3];
  } else if (keyId.startsWith('arn:')) throw keyNotFound(keyId);
  if (name.startsWith('alias/')) {
    if (!ALIAS_NAME.test(name)) throw keyNotFound(keyId);
    const kid = await aliasTarget(ctx, c.tenantId, name);
    if (kid === null) throw keyNotFound(keyId);
    return kid;
  }
  const kid = name.startsWith('key/') ? name.slice(4) : name;
  if (!KID.test(kid)) throw keyNotFound(keyId);
  return kid;
}
