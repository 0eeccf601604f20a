/**
 * The AWS KMS API's transport: `POST /` with `X-Amz-Target: TrentService.<Op>`
 * and `Content-Type: application/x-amz-json-1.1`. Served by the runtime lane (api/runtime-lane.ts)
 * (Express's route, api/routes/aws-kms.ts, for an app without the lane), with this one core: SigV4 against
 * the workload's access key, then the request acts as the workload does with its OAuth tokens
 * (the same AccessClaims: tenant, permissions, rate budget, audit actor). Every refusal is the
 * AWS shape `{"__type", "message"}`; once the signature verifies, it is audited in the workload's
 * name too (before that, see authenticate below).
 */
import type { IncomingMessage } from 'node:http';
import type { AppContext } from '../context.ts';
import { AUDIENCE_CORE, type AccessClaims } from '../services/auth/access-tokens.ts';
import { ACCESS_KEY_ID, accessKeyHolder } from '../services/auth/access-keys.ts';
import type { AccessKeyHolder } from '../services/auth/access-key-holder.ts';
import {
  MAX_SPENT_PAIRS,
  isRateLimited,
  rateKey,
  retryAfterSeconds,
} from '../services/auth/rate-limits.ts';
import { requirePermissions } from '../access/checks.ts';
import { consumeApiBudget } from '../access/budget.ts';
import { runRuntime } from '../services/crypto/batch.ts';
import { AwsError, toAwsError } from '../services/aws-kms/errors.ts';
import { AWS_OPERATIONS } from '../services/aws-kms/operations.ts';
import { checkScope, parseAuthorization, verifySignature, type SigV4Credential } from './sigv4.ts';
import { readCappedBytes } from './json-body.ts';
import { clientGone } from './access-log.ts';
import { ANONYMOUS_ACTOR, subjectActor } from '../../shared/audit/actor.ts';

/** The AWS protocol's media type (awsJson1_1). */
export const AMZ_JSON = 'application/x-amz-json-1.1';

/** What the transport writes. */
export interface AwsAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

function answerOf(
  status: number,
  body: unknown,
  id: string,
  errorType?: string,
  retryAfter?: number,
): AwsAnswer {
  const headers: Record<string, string> = { 'Content-Type': AMZ_JSON, 'x-amzn-RequestId': id };
  if (errorType) headers['x-amzn-ErrorType'] = errorType;
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  return { status, headers, body: JSON.stringify(body) };
}

/**
 * The workload's claims, as its client_credentials token would carry them: one object per holder
 * (the access-key cache keeps a holder 5 seconds), issued when the holder was loaded.
 */
const claimsOfHolder = new WeakMap<AccessKeyHolder, AccessClaims>();
function claimsOf(holder: AccessKeyHolder): AccessClaims {
  let claims = claimsOfHolder.get(holder);
  if (!claims) {
    const iat = Math.floor(holder.loadedAt / 1000);
    claims = {
      iss: 'aws-sigv4',
      sub: holder.workloadId,
      aud: AUDIENCE_CORE,
      tenantId: holder.tenantId,
      permissions: holder.permissions,
      client_id: holder.clientId,
      jti: `aws:${holder.accessKeyId}`,
      iat,
      exp: iat + 300,
      kind: 'workload',
    };
    claimsOfHolder.set(holder, claims);
  }
  return claims;
}

/** The 429 of a spent failure budget, as the token endpoint answers it, in AWS's words. */
const budgetSpent = (retryAfter: number) =>
  new AwsError(
    'LimitExceededException',
    'Too many failed authentications from this address; retry later.',
    429,
    retryAfter,
  );

/**
 * The access key whose signature verifies, with the body it signs. Until then the caller is
 * anonymous: nothing it sends is written in the key's tenant chain. As at the token endpoint
 * (api/services/auth/client-auth.ts, unknown client ids), every refusal once an access key id is named
 * is tallied in the platform chain (one event per address and second, actor `anonymous`,
 * target the access key and address) and spends the failure budget of the (access key, address)
 * pair, or of the address alone for an id that names no key; past it, 429 LimitExceededException
 * until the budget refills, without verifying (docs/aws-kms.md).
 */
async function authenticate(
  ctx: AppContext,
  req: IncomingMessage,
): Promise<{ cred: SigV4Credential; holder: AccessKeyHolder; body: Buffer }> {
  const cred = parseAuthorization(req.headers.authorization);
  const address = req.socket.remoteAddress ?? 'unknown';
  let holder: AccessKeyHolder | null = null;
  let pair = `access-key:${cred.accessKeyId}@${address}`;
  const { spentPairs } = ctx.auth.limits;
  const spentUntil = spentPairs.get(pair);
  if (spentUntil !== undefined) {
    if (spentUntil > Date.now()) throw budgetSpent(Math.ceil((spentUntil - Date.now()) / 1000));
    spentPairs.delete(pair);
  }
  try {
    checkScope(cred, req.headers, ctx.config.awsKmsRegions ?? [], Date.now());
    holder = await accessKeyHolder(ctx, cred.accessKeyId);
    if (!holder || !holder.usable)
      throw new AwsError(
        'UnrecognizedClientException',
        'The security token included in the request is invalid.',
      );
    let body: Buffer;
    try {
      body = await readCappedBytes(req, ctx.config.jsonLimitBytes);
    } catch (err) {
      throw new AwsError(
        'ValidationException',
        (err as { code?: string })?.code === 'payload_too_large'
          ? `The request body is larger than ${ctx.config.jsonLimitBytes} bytes`
          : 'The request body could not be read',
      );
    }
    verifySignature(cred, holder.secret, req.method ?? 'POST', req.url ?? '/', req.headers, body);
    return { cred, holder, body };
  } catch (err) {
    if (!(err instanceof AwsError) || err.status >= 500) throw err;
    // A scope refused before the lookup: which budget it spends depends on whether the id names a key.
    if (holder === null && ACCESS_KEY_ID.test(cred.accessKeyId))
      holder = await accessKeyHolder(ctx, cred.accessKeyId).catch(() => null);
    const known = holder !== null;
    if (!known) pair = rateKey('address', address);
    ctx.audit.tally({
      tenantId: await ctx.auth.platformTenantId(),
      actor: ANONYMOUS_ACTOR,
      action: 'aws-kms.authenticate',
      outcome: 'failure',
      // Never the sender's text: an id that names no key is not written.
      target: known ? `access-key:${cred.accessKeyId}@${address}` : `address:${address}`,
    });
    try {
      await ctx.auth.limits.failures.consume(pair);
    } catch (spent) {
      if (!isRateLimited(spent)) throw err;
      if (known) {
        if (spentPairs.size >= MAX_SPENT_PAIRS)
          spentPairs.delete(spentPairs.keys().next().value as string);
        spentPairs.set(pair, Date.now() + spent.msBeforeNext);
      }
      throw budgetSpent(retryAfterSeconds(spent));
    }
    throw err;
  }
}

/** Answers one AWS KMS API request; `noteClaims` learns the workload once its signature verifies. */
export async function awsAnswer(
  ctx: AppContext,
  req: IncomingMessage,
  id: string,
  noteClaims: (claims: AccessClaims) => void,
): Promise<AwsAnswer> {
  let claims: AccessClaims | undefined;
  let action = 'aws-kms.request';
  let audited = false;
  try {
    const { cred, holder, body } = await authenticate(ctx, req);
    claims = claimsOf(holder);
    noteClaims(claims);
    const target = req.headers['x-amz-target'];
    const name =
      typeof target === 'string' && target.startsWith('TrentService.') ? target.slice(13) : '';
    const operation = AWS_OPERATIONS.get(name);
    if (!operation)
      throw new AwsError(
        'UnknownOperationException',
        'The operation is not known to this service.',
      );
    action = operation.action;
    // No seen-set of signatures: SigV4 signs whole seconds, so two identical requests in one
    // second (an SDK's retry, a poll, the same call twice) carry the same signature and are both
    // legitimate. As AWS KMS does, a captured request is refused once its X-Amz-Date leaves the
    // 5-minute window (checkScope), and any change to it breaks the signature (docs/aws-kms.md).
    const sent = req.headers['content-type'];
    if (sent !== AMZ_JSON && (sent ?? '').split(';')[0].trim().toLowerCase() !== AMZ_JSON)
      throw new AwsError('UnknownOperationException', `Content-Type must be ${AMZ_JSON}`);
    let input: unknown;
    try {
      input = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
    } catch {
      throw new AwsError('SerializationException', 'The request body is not valid JSON.');
    }
    if (input === null || typeof input !== 'object' || Array.isArray(input))
      throw new AwsError('SerializationException', 'The request body must be a JSON object.');
    const attempt = { method: 'POST', path: `/#${name}`, id };
    // Audited by requirePermissions (denied), runRuntime (tallied) or below.
    audited = true;
    requirePermissions(ctx, claims, operation.permissions, attempt);
    await consumeApiBudget(ctx, claims, operation.action);
    const caller = {
      tenantId: holder.tenantId,
      region: cred.region,
      abandoned: () => clientGone(req),
    };
    const actor = subjectActor(claims);
    const members = input as Record<string, unknown>;
    let result: Record<string, unknown>;
    if (operation.runtime) {
      result = (await runRuntime(
        ctx,
        claims,
        operation.action,
        (c) => operation.run(c, caller, members, actor),
        {
          request: true,
        },
      )) as Record<string, unknown>;
    } else {
      audited = false;
      result = await operation.run(ctx, caller, members, actor);
      const { kid } = result;
      ctx.audit.record({
        tenantId: holder.tenantId,
        actor,
        action,
        outcome: 'success',
        target: typeof kid === 'string' ? kid : null,
      });
      audited = true;
    }
    const { kid: _target, ...answer } = result;
    return answerOf(200, answer, id);
  } catch (err) {
    const e = toAwsError(err);
    if (e.status >= 500)
      ctx.logger
        .child({ reqId: id })
        .error({ err: (err as Error)?.message, action }, 'AWS KMS API request failed');
    if (claims && !audited)
      ctx.audit.record({
        tenantId: claims.tenantId,
        actor: subjectActor(claims),
        action,
        outcome: 'failure',
        details: { exception: e.type },
      });
    return answerOf(e.status, { __type: e.type, message: e.message }, id, e.type, e.retryAfter);
  }
}
