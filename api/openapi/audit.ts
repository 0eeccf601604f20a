/**
 * OpenAPI paths of the Audit API: a tenant's hash-chained events, verification of the chain,
 * and its head. Every path needs a `service-core` bearer token and answers for the token's
 * tenant only; the Admin API has the same three under /api/v3/admin/tenants/{tenantId}/audit
 * for people (a `service-admin` token, the tenant in the path), documented from the same
 * operations here.
 */
import { jsonResponse, problems, type Schema } from './components.ts';

const str = { type: 'string' };
const seq = { type: 'integer', minimum: 0 };
const sha256 = { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'hex SHA-256' };
const obj = (properties: Schema, required: string[] = Object.keys(properties)): Schema => ({
  type: 'object',
  required,
  properties,
});
const ok = jsonResponse;
const query = (name: string, schema: Schema, description: string) => ({
  name,
  in: 'query',
  required: false,
  schema,
  description,
});
const COMMON = {
  401: 'missing, invalid or expired bearer token, or the wrong audience',
  403: 'the role lacks the permission',
};

const headSeq = { ...seq, description: 'seq of the last event; 0 before the first' };
const headHash = { ...sha256, description: 'hash of the last event; 64 zeros before the first' };
const Head = obj({ seq: headSeq, hash: headHash });
const Event = obj({
  seq: { type: 'integer', minimum: 1 },
  at: { type: 'string', format: 'date-time' },
  actor: str,
  action: str,
  outcome: { enum: ['success', 'failure', 'denied'] },
  target: { type: ['string', 'null'] },
  details: {
    type: 'object',
    description:
      '`{count, since}` for tallied runtime operations; `audit.events-lost` events say how many events the service could not keep for this tenant',
  },
  hash: sha256,
  prevHash: sha256,
});
const time = (name: string, bound: string) =>
  query(
    name,
    { type: 'string', format: 'date-time' },
    `${bound}; an RFC 3339 date-time with offset, or a date (midnight UTC), years 0001 to 9999`,
  );

export const auditPaths = {
  '/api/v3/audit/events': {
    get: {
      tags: ['audit'],
      operationId: 'listAuditEvents',
      summary: "The tenant's audit events in chain order",
      description: 'Requires `audit.events.read`. Unknown query parameters answer 400.',
      parameters: [
        time('from', 'events at or after'),
        time('to', 'events before'),
        query('actor', str, 'exact actor'),
        query('action', str, 'exact action'),
        query('outcome', { enum: ['success', 'failure', 'denied'] }, 'exact outcome'),
        query('limit', { type: 'integer', minimum: 1, maximum: 1000, default: 100 }, 'page size'),
        query('cursor', str, 'nextCursor of the previous page'),
      ],
      responses: {
        200: ok(
          'events',
          obj({ items: { type: 'array', items: Event }, nextCursor: { type: ['string', 'null'] } }),
          {
            items: [
              {
                seq: 45,
                at: '2026-11-23T15:00:00.000Z',
                actor: 'workload:6f1c2b9e-3d4a-4f7b-9a51-0c8e2d7f4b10',
                action: 'crypto.encrypt',
                outcome: 'success',
                target: 'orders',
                details: { count: 1027, since: '2026-11-23T14:59:00.000Z' },
                hash: 'c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2',
                prevHash: '2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae',
              },
            ],
            nextCursor: null,
          },
        ),
        ...problems({
          400: 'validation-failed: a bad time, limit, cursor or filter, or an unknown parameter',
          ...COMMON,
        }),
      },
    },
  },
  '/api/v3/audit/verify': {
    post: {
      tags: ['audit'],
      operationId: 'verifyAudit',
      summary: 'Verify the hash chain over a range, and against the recorded head',
      description:
        'Requires `audit.verify`. Checks every hash and link from fromSeq to toSeq (default: the head). When the range reaches the head, the chain must end exactly at it: deleting the newest events answers `valid: false` with `truncated`.',
      requestBody: {
        required: false,
        content: {
          'application/json': {
            schema: obj(
              {
                fromSeq: { type: 'integer', minimum: 1, default: 1 },
                toSeq: { type: 'integer', minimum: 1 },
              },
              [],
            ),
            example: { fromSeq: 1 },
          },
        },
      },
      responses: {
        200: ok(
          'the verdict',
          {
            oneOf: [
              obj({ valid: { const: true }, checked: seq, fromSeq: seq, toSeq: seq, head: Head }),
              obj(
                {
                  valid: { const: false },
                  checked: seq,
                  firstBroken: obj({ seq, reason: str }),
                  head: Head,
                  truncated: {
                    ...obj({ expectedSeq: seq, foundSeq: seq }),
                    description:
                      'the newest events are gone: the head is at expectedSeq, the chain ends at foundSeq',
                  },
                },
                ['valid', 'checked', 'firstBroken', 'head'],
              ),
            ],
          },
          {
            valid: false,
            checked: 41,
            firstBroken: {
              seq: 42,
              reason: 'the chain ends at event 41 but its recorded head is event 45',
            },
            truncated: { expectedSeq: 45, foundSeq: 41 },
            head: {
              seq: 45,
              hash: 'c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2',
            },
          },
        ),
        ...problems({
          400: 'validation-failed: fromSeq or toSeq not a positive integer, or an unknown member',
          415: 'not application/json',
          ...COMMON,
        }),
      },
    },
  },
  '/api/v3/audit/head': {
    get: {
      tags: ['audit'],
      operationId: 'getAuditHead',
      summary: "The head of the tenant's chain, to anchor outside the service",
      description:
        'Requires `audit.verify`. Copy it elsewhere (a ticket, another system, a signed note); a later verify that no longer reaches it shows that events were removed.',
      responses: {
        200: ok(
          'the head',
          obj({
            tenantId: { type: 'string', format: 'uuid' },
            seq: headSeq,
            hash: headHash,
            at: {
              type: ['string', 'null'],
              format: 'date-time',
              description: 'time of the last event',
            },
          }),
          {
            tenantId: '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c',
            seq: 45,
            hash: 'c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2',
            at: '2026-11-23T15:00:00.000Z',
          },
        ),
        ...problems(COMMON),
      },
    },
  },
};

const TENANT_IN_PATH = {
  name: 'tenantId',
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
  description: "the tenant; must be the token's unless it holds admin.platform.cross-tenant",
  example: '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c',
};

/** An audit operation as the Admin API serves it: the tenant in the path, a service-admin token. */
function adminOf<O extends { summary: string; responses: object; parameters?: unknown[] }>(
  operation: O,
  operationId: string,
) {
  return {
    ...operation,
    operationId,
    summary: `${operation.summary} (Admin API: the tenant in the path, for people)`,
    parameters: [TENANT_IN_PATH, ...(operation.parameters ?? [])],
    responses: {
      ...operation.responses,
      ...problems({
        ...COMMON,
        403: "the role lacks the permission, or the tenant is not the token's",
        404: 'no such tenant',
      }),
    },
  };
}

const ADMIN = '/api/v3/admin/tenants/{tenantId}/audit';

/** The audit operations of the Admin API (api/routes/v3/admin/tenants/audit.ts). */
export const adminAuditPaths = {
  [`${ADMIN}/events`]: {
    get: adminOf(auditPaths['/api/v3/audit/events'].get, 'adminListAuditEvents'),
  },
  [`${ADMIN}/verify`]: {
    post: adminOf(auditPaths['/api/v3/audit/verify'].post, 'adminVerifyAudit'),
  },
  [`${ADMIN}/head`]: {
    get: adminOf(auditPaths['/api/v3/audit/head'].get, 'adminGetAuditHead'),
  },
};
