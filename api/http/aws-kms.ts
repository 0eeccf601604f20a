/**
 * The AWS KMS API's transport (contract 10): `POST /` with `X-Amz-Target: TrentService.<Op>`
 * and `Content-Type: application/x-amz-json-1.1`. Served by the runtime lane (api/runtime-lane.ts)
 * (Express's route, api/routes/aws-kms.ts, for an app without the lane), with this one core: SigV4 against
 * the workload's access key, then the request acts as the workload does with its OAuth tokens
 * (the same AccessClaims: tenant, permissions, rate budget, audit actor). Every refusal is the
 * AWS shape `{"__type", "message"}`; once a workload is identified, it is audited too.
 */
import type { IncomingMessage } from 'node:http';
import type { AppContext } from '../context.ts';
import { AUDIENCE_CORE, type AccessClaims } from '../services/auth/access-tokens.ts';
import { accessKeys, type AccessKeyHolder } from '../services/auth/access-keys.ts';
import { requirePermissions } from '../access/checks.ts';
import { consumeApiBudget } from '../access/budget.ts';
import { runRuntime } from '../services/crypto/batch.ts';
import { AwsError, toAwsError } from '../services/aws-kms/errors.ts';
import { AWS_OPERATIONS } from '../services/aws-kms/operations.ts';
import { checkScope, parseAuthorization, verifySignature } from './sigv4.ts';
import { readCappedBytes } from './json-body.ts';
import { clientGone } from './access-log.ts';
import { subjectActor } from '../../shared/audit/actor.ts';

/** The AWS protocol's media type (awsJson1_1). */
export const AMZ_JSON = 'application/x-amz-json-1.1';

/** What the transport writes. */
export interface AwsAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

/** AWS_KMS_REGIONS as a list; empty accepts any region. Split once per configuration. */
const regionLists = new WeakMap<AppContext['config'], string[]>();
function regionsOf(ctx: AppContext): string[] {
  let list = regionLists.get(ctx.config);
  if (!list) {
    list = (ctx.config.awsKmsRegions ?? '')
      .split(',')
      .map((r) => r.trim())
      .filter(Boolean);
    regionLists.set(ctx.config, list);
  }
  return list;
}

function answerOf(status: number, body: unknown, id: string, errorType?: string): AwsAnswer {
  const headers: Record<string, string> = { 'Content-Type': AMZ_JSON, 'x-amzn-RequestId': id };
  if (errorType) headers['x-amzn-ErrorType'] = errorType;
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

/** Answers one AWS KMS API request; `noteClaims` learns the workload once it is identified. */
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
    const cred = parseAuthorization(req.headers.authorization);
    checkScope(cred, req.headers, regionsOf(ctx), Date.now());
    const holder = await accessKeys(ctx).lookup(cred.accessKeyId);
    if (!holder || !holder.usable)
      throw new AwsError(
        'UnrecognizedClientException',
        'The security token included in the request is invalid.',
      );
    claims = claimsOf(holder);
    noteClaims(claims);
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
    return answerOf(e.status, { __type: e.type, message: e.message }, id, e.type);
  }
}
