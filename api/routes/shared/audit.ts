/**
 * The three audit endpoints (events, verify, head), as rows for the two places that serve them:
 * the Audit API, for the token's tenant with a service-core token (api/routes/v3/audit.ts), and
 * the Admin API, with the tenant in the path for people (api/routes/v3/admin/tenants/audit.ts).
 *
 * Tests: test/integration/admin/audit.test.ts, test/integration/audit/log.test.ts
 */
import Type, { type TObject } from 'typebox';
import { endpoint, type Endpoint } from '../../rows/endpoint.ts';
import { PageOf, Resource, Time, Uuid } from '../../schemas/common.ts';
import type { AccessClaims } from '../../services/auth/access-tokens.ts';
import { readHead, verifyChain } from '../../../shared/audit/verify.ts';
import { listEvents, readEventFilter } from '../../services/audit-query.ts';
import { HASH, Seq, Sha256, OUTCOMES, Event } from '../../schemas/audit.ts';

const HEAD_SEQ = 'seq of the last event; 0 before the first';
const HEAD_HASH = 'hash of the last event; 64 zeros before the first';
const ChainHead = Type.Object({ seq: Seq(HEAD_SEQ), hash: Sha256(HEAD_HASH) });

/** A time bound: the service reads it (api/services/audit-query.ts timeParam). */
const TimeBound = (bound: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.String({ format: 'date' })], {
    description: `${bound}; an RFC 3339 date-time with offset, or a date (midnight UTC), years 0001 to 9999`,
  });
const Text = (description: string) => Type.String({ maxLength: 1024, description });

/** Closed: an unknown query parameter is refused naming it. */
const EventQuery = Type.Object(
  {
    from: Type.Optional(TimeBound('events at or after')),
    to: Type.Optional(TimeBound('events before')),
    actor: Type.Optional(Text('exact actor')),
    action: Type.Optional(Text('exact action')),
    outcome: Type.Optional(Type.Enum(OUTCOMES, { description: 'exact outcome' })),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'page size' }),
    ),
    cursor: Type.Optional(Text('nextCursor of the previous page')),
  },
  { additionalProperties: false },
);

const Verdict = Type.Union(
  [
    Type.Object({
      valid: Type.Literal(true),
      checked: Seq(),
      fromSeq: Seq(),
      toSeq: Seq(),
      head: ChainHead,
    }),
    Type.Object({
      valid: Type.Literal(false),
      checked: Seq(),
      firstBroken: Type.Object({ seq: Seq(), reason: Type.String() }),
      head: ChainHead,
      truncated: Type.Optional(
        Type.Object(
          { expectedSeq: Seq(), foundSeq: Seq() },
          {
            description:
              'the newest events are gone: the head is at expectedSeq, the chain ends at foundSeq',
          },
        ),
      ),
    }),
  ],
  {
    examples: [
      {
        valid: false,
        checked: 41,
        firstBroken: {
          seq: 42,
          reason: 'the chain ends at event 41 but its recorded head is event 45',
        },
        truncated: { expectedSeq: 45, foundSeq: 41 },
        head: { seq: 45, hash: HASH },
      },
    ],
  },
);

const Head = Resource(
  {
    tenantId: Uuid(),
    seq: Seq(HEAD_SEQ),
    hash: Sha256(HEAD_HASH),
    at: Type.Union([Time(), Type.Null()], { description: 'time of the last event' }),
  },
  {
    tenantId: '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c',
    seq: 45,
    hash: HASH,
    at: '2026-11-23T15:00:00.000Z',
  },
);

/** Where the audit endpoints are served: whose tenant, and how the operations are named there. */
export interface AuditPlace {
  /** The path parameters of the mount (the Admin API's tenant), if any. */
  params?: TObject;
  /** The tenant whose chain is read. */
  tenantOf: (input: { params: unknown; claims: AccessClaims }) => string;
  operationId: (name: string) => string;
  summary: (summary: string) => string;
  /** The refusals of this place beyond the shape's (403 worded for it, the admin 404). */
  problems: Readonly<Record<number, string>>;
}

/** The rows of the audit endpoints at `place`, in the order they were registered. */
export function auditEndpoints(place: AuditPlace): Endpoint[] {
  const tag = 'audit';
  const params = place.params;
  return [
    endpoint({
      method: 'get',
      path: '/events',
      operationId: place.operationId('listAuditEvents'),
      tag,
      summary: place.summary("The tenant's audit events in chain order"),
      description: 'Unknown query parameters answer 400.',
      access: { anyOf: ['audit.events.read'] },
      params,
      query: EventQuery,
      answer: { status: 200, description: 'events', schema: PageOf(Event) },
      problems: {
        400: 'validation-failed: a bad time, limit, cursor or filter, or an unknown parameter',
        ...place.problems,
      },
      handle: async (ctx, input) => {
        const filter = readEventFilter(input.query);
        // Events still buffered in this process are written first, so the caller reads its own.
        await ctx.audit.flush();
        return listEvents(ctx.db, place.tenantOf(input), filter);
      },
    }),
    endpoint({
      method: 'post',
      path: '/verify',
      operationId: place.operationId('verifyAudit'),
      tag,
      summary: place.summary('Verify the hash chain over a range, and against the recorded head'),
      description:
        'Checks every hash and link from fromSeq to toSeq (default: the head). When the range reaches the head, the chain must end exactly at it: deleting the newest events answers `valid: false` with `truncated`.',
      access: { anyOf: ['audit.verify'] },
      params,
      body: Type.Object(
        {
          fromSeq: Type.Optional(
            Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 }),
          ),
          toSeq: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
        },
        { additionalProperties: false, examples: [{ fromSeq: 1 }] },
      ),
      bodyOptional: true,
      answer: { status: 200, description: 'the verdict', schema: Verdict },
      problems: {
        400: 'validation-failed: fromSeq or toSeq not a positive integer, or an unknown member',
        415: 'not application/json',
        ...place.problems,
      },
      handle: async (ctx, input) => {
        await ctx.audit.flush();
        const { fromSeq = 1, toSeq } = input.body;
        return verifyChain(ctx.db, place.tenantOf(input), fromSeq, toSeq);
      },
    }),
    endpoint({
      method: 'get',
      path: '/head',
      operationId: place.operationId('getAuditHead'),
      tag,
      summary: place.summary("The head of the tenant's chain, to anchor outside the service"),
      description:
        'Copy it elsewhere (a ticket, another system, a signed note); a later verify that no longer reaches it shows that events were removed.',
      // The same permission as verify: the head is what a verifier anchors elsewhere.
      access: { anyOf: ['audit.verify'] },
      params,
      answer: { status: 200, description: 'the head', schema: Head },
      problems: place.problems,
      handle: async (ctx, input) => {
        await ctx.audit.flush();
        return readHead(ctx.db, place.tenantOf(input));
      },
    }),
  ];
}
