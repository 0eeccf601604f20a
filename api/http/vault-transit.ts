/**
 * The Vault Transit API's transport: every request under `/v1/`, served by the runtime lane
 * (api/runtime-lane.ts) ahead of Express (Express's router, api/routes/vault-transit.ts, for an
 * app without the lane), with this one core: the row of the path (api/services/vault-transit/
 * operations.ts) below any one-segment mount, the token (`X-Vault-Token`, or `Authorization:
 * Bearer`) checked as every bearer API checks it, `X-Vault-Namespace` as the tenant, the mount
 * as one of the tenant's (ctx.transitMounts), the JSON body, then permissions, the rate
 * budget, the service and the audit as natively. Every answer is Vault's: `{"data": ...}` (or
 * `{"auth": ...}`), 204, or `{"errors": [...]}` with Vault's status (docs/vault-transit.md).
 */
import type { IncomingMessage } from 'node:http';
import type { AppContext } from '../context.ts';
import { AUDIENCE_CORE, bearerToken, type AccessClaims } from '../services/auth/access-tokens.ts';
import { bearerClaims, requirePermissions, requireTenant } from '../access/checks.ts';
import { consumeApiBudget } from '../access/budget.ts';
import { runRuntime } from '../services/crypto/batch.ts';
import { MAX_BATCH } from '../services/crypto/bodies.ts';
import {
  TRANSIT_MOUNT,
  TRANSIT_OPERATIONS,
  type TransitCall,
  type TransitOperation,
} from '../services/vault-transit/operations.ts';
import {
  invalidRequest,
  permissionDenied,
  toVaultError,
  VaultError,
} from '../services/vault-transit/errors.ts';
import { readCappedBytes } from './json-body.ts';
import { clientGone } from './access-log.ts';
import { canonicalId, isUuid } from '../../shared/ids.ts';
import { subjectActor } from '../../shared/audit/actor.ts';

/** The prefix of every Vault path. */
export const VAULT_PREFIX = '/v1';

/** What the transport writes. */
export interface VaultAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

const JSON_TYPE = 'application/json';

/**
 * The rows as the matcher reads them: a Transit row below its mount (its first segment, which
 * the tenant's mounts replace), an `auth/...` row at its own path.
 */
const ROWS = TRANSIT_OPERATIONS.map((op) => {
  const segments = op.path.split('/');
  const mounted = segments[0] === TRANSIT_MOUNT;
  // The route template the access log and metrics name: the default mount's as the row is
  // declared, another mount's as `:mount` (a tenant's name is no label).
  const route = `${VAULT_PREFIX}/${op.path}`;
  const otherMount = mounted ? `${VAULT_PREFIX}/:mount/${segments.slice(1).join('/')}` : route;
  return { op, mounted, segments: mounted ? segments.slice(1) : segments, route, otherMount };
});

/** The methods a row answers: a write also as PUT (Vault's Go client), a read also as HEAD. */
const answers = (op: TransitOperation, method: string): boolean =>
  method === op.method ||
  (op.method === 'POST' && method === 'PUT') ||
  (op.method === 'GET' && method === 'HEAD');

/** A path's row: its parameters and, for a Transit row, the mount the path named. */
interface Found {
  op: TransitOperation;
  /** The route template of the row at the mount the path named. */
  route: string;
  params: Record<string, string>;
  /** The first segment of a Transit row's path (whose tenant is not known yet); null for `auth/...`. */
  mount: string | null;
}

/**
 * The row and parameters of a path below /v1/ (decoded; a trailing slash ignored), 'method'
 * when the path is served but not with this method, null when it is not served. The `auth/...`
 * rows are matched at their path; every other row below any one-segment mount, which the caller
 * checks against the tenant's once the token names it.
 */
function match(path: string, method: string): Found | 'method' | null {
  const parts = (path.endsWith('/') ? path.slice(0, -1) : path).split('/');
  let pathServed = false;
  for (const { op, mounted, segments, route, otherMount } of ROWS) {
    const offset = mounted ? 1 : 0;
    if (segments.length + offset !== parts.length) continue;
    const params: Record<string, string> = {};
    let fits = !mounted || parts[0] !== '';
    for (let i = 0; i < segments.length && fits; i += 1) {
      const part = parts[i + offset];
      if (segments[i].startsWith(':')) {
        try {
          params[segments[i].slice(1)] = decodeURIComponent(part);
        } catch {
          fits = false;
        }
      } else fits = segments[i] === part;
    }
    if (!fits) continue;
    if (answers(op, method))
      return {
        op,
        route: mounted && parts[0] !== TRANSIT_MOUNT ? otherMount : route,
        params,
        mount: mounted ? parts[0] : null,
      };
    pathServed = true;
  }
  return pathServed ? 'method' : null;
}

/** Vault's answer to a path it serves nothing at: 404 with no message. */
const noRoute = (): VaultError => new VaultError(404, null);

function answerOf(status: number, body: string, retryAfter?: number): VaultAnswer {
  const headers: Record<string, string> = {
    'Content-Type': JSON_TYPE,
    'Cache-Control': 'no-store',
  };
  if (retryAfter !== undefined && Number.isFinite(retryAfter))
    headers['Retry-After'] = String(retryAfter);
  return { status, headers, body: status === 204 ? '' : body };
}

/**
 * Vault's response envelope around `data` or `auth`, written as text: the members are fixed and
 * only the request id and the value need JSON.stringify (the id is a canonical request id, the
 * value the operation's answer), which spares the encrypt path an object and a second walk.
 */
const envelope = (id: string, member: 'data' | 'auth', value: unknown): string => {
  const json = JSON.stringify(value);
  return `{"request_id":${JSON.stringify(id)},"lease_id":"","renewable":false,"lease_duration":0,"data":${member === 'data' ? json : 'null'},"wrap_info":null,"warnings":null,"auth":${member === 'auth' ? json : 'null'}}`;
};

/** The request's JSON object (empty without a body); Vault's 400 for anything else. */
async function bodyOf(ctx: AppContext, req: IncomingMessage): Promise<Record<string, unknown>> {
  let bytes: Buffer;
  try {
    bytes = await readCappedBytes(req, ctx.config.jsonLimitBytes);
  } catch (err) {
    if ((err as { code?: string })?.code === 'payload_too_large')
      throw new VaultError(413, 'http: request body too large');
    throw invalidRequest('the request body could not be read');
  }
  if (bytes.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw invalidRequest('failed to parse JSON input: the body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalidRequest('failed to parse JSON input: the body must be a JSON object');
  return value as Record<string, unknown>;
}

/** The token of the request: X-Vault-Token, else a Bearer Authorization. */
function tokenOf(req: IncomingMessage): string | null {
  const vault = req.headers['x-vault-token'];
  if (typeof vault === 'string' && vault !== '') return vault;
  return bearerToken(req.headers.authorization);
}

/**
 * The tenant a request acts in: the token's, or the one X-Vault-Namespace names when the token
 * may act there (a token with cross-tenant power); another tenant is 403 permission denied.
 */
function tenantOf(
  ctx: AppContext,
  req: IncomingMessage,
  claims: AccessClaims,
  attempt: { method: string; path: string; id: string },
): string {
  const header = req.headers['x-vault-namespace'];
  const ns = typeof header === 'string' ? header.replace(/^\/+|\/+$/g, '') : '';
  if (ns === '' || ns === 'root') return claims.tenantId;
  const tenantId = canonicalId(ns);
  requireTenant(ctx, claims, tenantId, attempt);
  // A name that is no tenant id names no tenant, whatever power the token has.
  if (!isUuid(tenantId)) throw permissionDenied();
  return tenantId;
}

/** Runs a runtime row once, or per `batch_input` item: `{data}` and whether every item succeeded. */
async function runOperation(
  ctx: AppContext,
  op: TransitOperation,
  claims: AccessClaims,
  call: TransitCall,
): Promise<{ data: Record<string, unknown>; failed: boolean }> {
  // The namespace's tenant, when it names another than the token's (cross-tenant power).
  const acting =
    call.tenantId === claims.tenantId ? claims : { ...claims, tenantId: call.tenantId };
  const once = (input: Record<string, unknown>) =>
    runRuntime(
      ctx,
      acting,
      op.action,
      (c) => op.run(c, { ...call, input }) as Promise<Record<string, unknown>>,
      {
        kid: call.params.kid,
      },
    ) as Promise<Record<string, unknown>>;
  const batch = call.input.batch_input;
  if (op.kind === 'runtime' || batch === undefined) {
    const { kid: _target, ...data } = await once(call.input);
    return { data, failed: false };
  }
  if (!Array.isArray(batch) || batch.length === 0 || batch.length > MAX_BATCH)
    throw invalidRequest(`batch_input must be an array of 1 to ${MAX_BATCH} items`);
  let failed = false;
  const results = await Promise.all(
    batch.map(async (item: unknown) => {
      const reference =
        item &&
        typeof item === 'object' &&
        typeof (item as Record<string, unknown>).reference === 'string'
          ? { reference: (item as Record<string, unknown>).reference }
          : {};
      try {
        if (!item || typeof item !== 'object' || Array.isArray(item))
          throw invalidRequest('each batch_input item must be a JSON object');
        const { kid: _target, ...result } = await once(item as Record<string, unknown>);
        return { ...result, ...reference };
      } catch (err) {
        failed = true;
        const e = toVaultError(err);
        if (e.status >= 500) throw err;
        return { error: e.messages[0] ?? 'error', ...reference };
      }
    }),
  );
  return { data: { batch_results: results }, failed };
}

/** Answers one request under /v1/; `noteClaims` learns the caller once its token verifies. */
export async function vaultAnswer(
  ctx: AppContext,
  req: IncomingMessage,
  url: string,
  id: string,
  noteClaims: (claims: AccessClaims) => void,
  noteRoute?: (route: string) => void,
): Promise<VaultAnswer> {
  let claims: AccessClaims | undefined;
  let tenantId: string | undefined;
  let op: TransitOperation | undefined;
  let audited = false;
  try {
    const q = url.indexOf('?');
    const path = (q === -1 ? url : url.slice(0, q)).slice(VAULT_PREFIX.length + 1);
    const method = (req.method ?? 'GET').toUpperCase();
    const found = match(path, method);
    if (found === null) throw noRoute();
    if (found === 'method') throw new VaultError(405, 'unsupported operation');
    op = found.op;
    const opPath =
      found.mount === null ? op.path : `${found.mount}/${op.path.slice(TRANSIT_MOUNT.length + 1)}`;
    const attempt = { method, path: `${VAULT_PREFIX}/${opPath}`, id };
    noteRoute?.(found.route);
    const address = req.socket.remoteAddress ?? 'unknown';
    const readBody = () =>
      method === 'POST' || method === 'PUT' ? bodyOf(ctx, req) : Promise.resolve({});
    if (op.kind === 'login') {
      const input = await readBody();
      const auth = await op.run(ctx, {
        tenantId: '',
        params: found.params,
        input,
        actor: '',
        token: '',
        address,
      });
      return answerOf(200, envelope(id, 'auth', auth));
    }
    const token = tokenOf(req);
    try {
      claims = await bearerClaims(
        ctx,
        token === null ? undefined : `Bearer ${token}`,
        [AUDIENCE_CORE],
        attempt,
      );
    } catch {
      throw permissionDenied();
    }
    noteClaims(claims);
    tenantId = tenantOf(ctx, req, claims, attempt);
    // A mount the tenant does not serve answers as a path served nowhere, unaudited and
    // unbudgeted as that one is: nothing tells another tenant's mount from no mount.
    audited = true;
    if (found.mount !== null && !ctx.transitMounts.serves(tenantId, found.mount)) throw noRoute();
    requirePermissions(ctx, claims, op.permissions, attempt);
    await consumeApiBudget(ctx, claims, op.action);
    const body = await readBody();
    const actor = subjectActor(claims);
    const call: TransitCall = {
      tenantId,
      params: found.params,
      input: body,
      actor,
      claims,
      token: token!,
      address,
    };
    if (op.kind === 'runtime' || op.kind === 'batch') {
      const { data, failed } = await runOperation(ctx, op, claims, call);
      // Vault answers a batch with a failed item 400, the results in `data` all the same.
      return answerOf(failed ? 400 : 200, envelope(id, 'data', data));
    }
    audited = op.kind === 'token';
    const result = await op.run(ctx, call);
    if (op.kind === 'control') {
      ctx.audit.record({
        tenantId,
        actor,
        action: op.action,
        outcome: 'success',
        target: found.params.kid ?? null,
      });
      audited = true;
    }
    if (result === null) return answerOf(204, '');
    const { kid: _target, ...value } = result;
    return answerOf(200, envelope(id, op.answersAuth ? 'auth' : 'data', value));
  } catch (err) {
    const e = toVaultError(err);
    if (e.status >= 500 && !clientGone(req))
      ctx.logger
        .child({ reqId: id })
        .error(
          { err: (err as Error)?.message, action: op?.action },
          'Vault Transit API request failed',
        );
    if (claims && tenantId && op && !audited)
      ctx.audit.record({
        tenantId,
        actor: subjectActor(claims),
        action: op.action,
        outcome: 'failure',
        target: null,
        details: { status: e.status },
      });
    return answerOf(e.status, JSON.stringify({ errors: e.messages }), e.retryAfter);
  }
}
