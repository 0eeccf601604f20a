/**
 * The Vault Transit API (docs/vault-transit.md) under /v1/, on Express for an app built without
 * the runtime lane (createApp alone; the listener's lane serves every /v1/ request first): the
 * same core (api/http/vault-transit.ts). Its protocol is Vault's, not a route row's (its token
 * header, its `{"data"}` envelope, its `{"errors"}` bodies), so its rows are the Transit table
 * (api/services/vault-transit/operations.ts), registered and documented here from that table.
 */
import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../context.ts';
import { vaultAnswer } from '../http/vault-transit.ts';
import type { HandDocumented } from '../openapi/endpoints.ts';
import { TRANSIT_OPERATIONS, type TransitOperation } from '../services/vault-transit/operations.ts';

/** Mounted at /v1. */
export function createVaultTransitRouter(ctx: AppContext): Router {
  const router = Router();
  const serve: RequestHandler = async (req, res) => {
    const answer = await vaultAnswer(ctx, req, req.originalUrl, String(req.id), (claims) => {
      req.auth = claims;
    });
    if (answer.status >= 400 && !req.readableEnded) res.setHeader('Connection', 'close');
    res.status(answer.status).set(answer.headers);
    if (answer.status === 204) res.end();
    else res.send(answer.body);
  };
  for (const op of TRANSIT_OPERATIONS) {
    const path = `/${op.path}`;
    if (op.method === 'POST') router.post(path, serve).put(path, serve);
    else if (op.method === 'GET') router.get(path, serve);
    else router.delete(path, serve);
  }
  // Any other path or method under /v1: Vault's 404 `{"errors": []}` or 405, from the core.
  router.use(serve);
  return router;
}

const JSON_MEDIA = 'application/json';

const vaultError = (description: string, example: { errors: string[] }) => ({
  description,
  content: { [JSON_MEDIA]: { schema: { $ref: '#/components/schemas/VaultError' }, example } },
});

/** The errors every Transit path may answer. */
const ERRORS = {
  400: vaultError(
    'invalid request: a member missing or malformed, a key of another type or state, "encryption key not found", or the one answer of every ciphertext that does not open (another tenant\'s, tampered, a wrong context)',
    { errors: ['invalid ciphertext: unable to decrypt'] },
  ),
  403: vaultError(
    'permission denied: no token, an invalid or expired one, a role without the permission, or a namespace the token may not act in',
    { errors: ['permission denied'] },
  ),
  404: vaultError('no such key (reads), or a path this service does not serve', { errors: [] }),
  429: vaultError('the rate budget of this operation is spent (Retry-After)', {
    errors: ['rate limit of vault-transit.encrypt reached; retry later'],
  }),
  500: vaultError('internal error', { errors: ['internal error'] }),
};

/** The one documented operation of a row and method (POST rows are documented as PUT too). */
function documented(
  op: TransitOperation,
  method: 'get' | 'post' | 'put' | 'delete',
): HandDocumented {
  const params = [...op.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
  const properties = Object.fromEntries(
    Object.entries(op.members ?? {}).map(([name, { type, description }]) => [
      name,
      { type: type === 'integer' ? ['integer', 'string'] : type, description },
    ]),
  );
  const login = op.kind === 'login';
  return {
    method,
    path: `/${op.path}`.replace(/:(\w+)/g, '{$1}'),
    operation: {
      tags: ['vault-transit'],
      operationId: method === 'put' ? `${op.operationId}Put` : op.operationId,
      summary: op.summary,
      description: `Vault Transit${method === 'put' ? " (PUT, as Vault's Go client writes)" : ''}. Permissions: ${op.permissions.join(', ') || 'a valid token'}. See docs/vault-transit.md.`,
      security: login ? [] : [{ vaultToken: [] }, { bearer: [] }],
      ...(op.expensive
        ? { 'x-keyward-expensive': { kinds: op.expensive.kinds, runsIn: 'api' } }
        : {}),
      parameters: [
        ...params.map((name) => ({
          name,
          in: 'path',
          required: true,
          schema: { type: 'string' },
          ...(name === 'bytes'
            ? { example: '32' }
            : name === 'algorithm'
              ? { example: 'sha2-256' }
              : {}),
        })),
        ...(login
          ? []
          : [
              {
                name: 'X-Vault-Namespace',
                in: 'header',
                required: false,
                schema: { type: 'string' },
                description:
                  "the tenant id; only the token's own tenant, unless the token has cross-tenant power",
              },
            ]),
        ...(op.method === 'GET' && op.path.endsWith('/keys')
          ? [
              {
                name: 'list',
                in: 'query',
                required: false,
                schema: { type: 'string' },
                example: 'true',
              },
            ]
          : []),
      ],
      ...(op.members
        ? {
            requestBody: {
              required: false,
              content: {
                [JSON_MEDIA]: {
                  schema: { type: 'object', properties, additionalProperties: true },
                  example: op.example ?? {},
                },
              },
            },
          }
        : {}),
      responses: {
        ...(op.kind === 'control' && op.method !== 'GET'
          ? { 204: { description: 'done (create: also when the name exists; delete)' } }
          : {}),
        ...(op.method === 'DELETE'
          ? {}
          : {
              200: {
                description:
                  login || op.answersAuth ? 'the token, in `auth`' : 'the answer, in `data`',
                content: {
                  [JSON_MEDIA]: {
                    schema: { $ref: '#/components/schemas/VaultResponse' },
                    example: {
                      request_id: '5d3f…',
                      data: { ciphertext: 'vault:v1:S1dDAWV5…', key_version: 1 },
                    },
                  },
                },
              },
            }),
        ...(login ? { 400: ERRORS[400], 429: ERRORS[429], 500: ERRORS[500] } : ERRORS),
      },
    },
  };
}

/** Every Transit operation, as the document shows it. */
export const VAULT_TRANSIT_DOCUMENTED: readonly HandDocumented[] = TRANSIT_OPERATIONS.flatMap(
  (op) =>
    op.method === 'POST'
      ? [documented(op, 'post'), documented(op, 'put')]
      : [documented(op, op.method === 'GET' ? 'get' : 'delete')],
);
