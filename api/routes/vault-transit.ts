/**
 * The Vault Transit API (docs/vault-transit.md) under /v1/, as protocol rows (api/rows/protocol.ts)
 * made from the Transit table (api/services/vault-transit/operations.ts): Vault's token header,
 * its `{"data"}` envelope and `{"errors"}` bodies, answered by one core
 * (api/http/vault-transit.ts) on the runtime lane and on Express alike.
 *
 * Tests: test/integration/vault-transit/hvac.test.ts,
 *   test/integration/vault-transit/node-vault.test.ts,
 *   test/integration/vault-transit/shaped-clients.test.ts,
 *   test/integration/vault-transit/flags-and-tenants.test.ts,
 *   test/integration/vault-transit/mounts.test.ts,
 *   test/integration/http/hostile-matrix.test.ts
 */
import { vaultAnswer } from '../http/vault-transit.ts';
import { protocolRow, type ProtocolRow } from '../rows/protocol.ts';
import {
  TRANSIT_MOUNT,
  TRANSIT_OPERATIONS,
  type TransitOperation,
} from '../services/vault-transit/operations.ts';

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
  404: vaultError(
    "no such key (reads), or a path this service does not serve (a mount the token's tenant does not list included)",
    { errors: [] },
  ),
  429: vaultError('the rate budget of this operation is spent (Retry-After)', {
    errors: ['rate limit of vault-transit.encrypt reached; retry later'],
  }),
  500: vaultError('internal error', { errors: ['internal error'] }),
};

/** The one documented operation of a row and method (POST rows are documented as PUT too). */
function documented(op: TransitOperation, method: 'get' | 'post' | 'put' | 'delete') {
  const params = [...op.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
  const properties = Object.fromEntries(
    Object.entries(op.members ?? {}).map(([name, { type, description }]) => [
      name,
      { type: type === 'integer' ? ['integer', 'string'] : type, description },
    ]),
  );
  const login = op.kind === 'login';
  const mounted = op.path.startsWith(`${TRANSIT_MOUNT}/`);
  return {
    method,
    path: `/${op.path}`.replace(/:(\w+)/g, '{$1}'),
    operation: {
      tags: ['vault-transit'],
      operationId: method === 'put' ? `${op.operationId}Put` : op.operationId,
      summary: op.summary,
      description: `Vault Transit${method === 'put' ? " (PUT, as Vault's Go client writes)" : ''}. Permissions: ${op.permissions.join(', ') || 'a valid token'}.${mounted ? ` At the default mount \`${TRANSIT_MOUNT}\`: a tenant's policy \`vaultTransitMounts\` replace it (/v1/<mount>/...), and a mount the tenant does not list answers 404 as an unknown path.` : ''} See docs/vault-transit.md.`,
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
                      data: { ciphertext: 'vault:v1:S1dDAgBIZXlK…', key_version: 1 },
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

/** The Transit core for one request, whichever path below /v1 it names (it reads the path itself). */
export const serveTransit: ProtocolRow['serve'] = (ctx, { req, id, noteClaims, noteRoute }) =>
  vaultAnswer(
    ctx,
    req,
    (req as { originalUrl?: string }).originalUrl ?? req.url ?? '',
    id,
    noteClaims,
    noteRoute,
  );

/** One protocol row of a Transit operation and method; the core reads the path itself. */
function transitRow(op: TransitOperation, method: 'get' | 'post' | 'put' | 'delete'): ProtocolRow {
  const { path, operation } = documented(op, method);
  return protocolRow({
    method,
    path: path.replace(/\{(\w+)\}/g, ':$1'),
    protocol: 'vault-transit',
    errorMedia: JSON_MEDIA,
    errorSchema: '#/components/schemas/VaultError',
    operation,
    serve: serveTransit,
  });
}

/**
 * Every Transit operation as protocol rows (POST ones as PUT too, as Vault's Go client writes).
 * The runtime lane serves every request under the mount through the same core (`laneAll`), so
 * an unknown path or method there answers Vault's shape too.
 */
export const VAULT_TRANSIT_ROWS: readonly ProtocolRow[] = TRANSIT_OPERATIONS.flatMap((op) =>
  op.method === 'POST'
    ? [transitRow(op, 'post'), transitRow(op, 'put')]
    : [transitRow(op, op.method === 'GET' ? 'get' : 'delete')],
);
