/**
 * Cryptographic exchanges of a tenant (`admin.cryptographicexchange.*`): offer a key to another
 * tenant, list and read the offers where this tenant is either side, accept, reject, cancel.
 * The workflow and its design are in api/services/exchanges.ts, which audits each step in both
 * tenants (so the rows declare no audit of their own).
 *
 * Tests: test/integration/admin/exchanges.test.ts, test/integration/keys/rsa-exponents.test.ts,
 *   test/integration/audit/log.test.ts, test/integration/core/kms-mac-public.test.ts
 */
import Type from 'typebox';
import { endpoint } from '../../../../rows/endpoint.ts';
import { pageRequest } from '../../../../rows/pagination.ts';
import { KeyRecord } from '../../../../schemas/keys.ts';
import {
  Body,
  PAGE_QUERY,
  PageOf,
  TENANT_PARAM,
  TenantRecord,
  Uuid,
} from '../../../../schemas/common.ts';
import {
  acceptExchange,
  closeExchange,
  listExchanges,
  offerExchange,
  readExchange,
} from '../../../../services/exchanges.ts';
import { Exchange, STATES } from '../../../../schemas/exchanges.ts';

const Tenant = Type.Object(TENANT_PARAM);
const ExchangePath = TenantRecord('exchange');
const tag = 'cryptographic-exchanges';
const access = (step: string) => ({ anyOf: [`admin.cryptographicexchange.${step}`] }) as const;

/** The problems of a step on a pending offer. */
const STEP_PROBLEMS = {
  403: "missing permission, another tenant's path, or the wrong side of the exchange",
  404: 'no such exchange',
  409: 'exchange-not-pending',
  410: 'exchange-expired',
};

/** Reject (receiving tenant) or cancel (offering tenant): the offer is closed, its payload dropped. */
const closeStep = (action: 'reject' | 'cancel', summary: string) =>
  endpoint({
    method: 'post',
    path: `/:id/${action}`,
    operationId: `${action}Exchange`,
    tag,
    summary,
    access: access(action),
    params: ExchangePath,
    body: Body({
      reason: Type.Optional(
        Type.String({
          description: 'recorded in the audit event of both tenants, its first 200 characters',
        }),
      ),
    }),
    bodyOptional: true,
    answer: { status: 200, description: 'the exchange', schema: Exchange },
    problems: STEP_PROBLEMS,
    handle: (ctx, { params, body, actor }) =>
      closeExchange(ctx, params.tenantId, params.id, actor, action, body),
  });

/** Mounted at /api/v3/admin/tenants/:tenantId/cryptographic-exchanges. */
export const EXCHANGE_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/',
    operationId: 'listExchanges',
    tag,
    summary: 'Exchanges where this tenant is either side',
    access: access('read'),
    params: Tenant,
    query: Type.Object({
      direction: Type.Optional(
        Type.Enum(['incoming', 'outgoing'], { description: 'one side only' }),
      ),
      state: Type.Optional(Type.Enum(STATES, { description: 'only this state' })),
      ...PAGE_QUERY,
    }),
    answer: { status: 200, description: 'exchanges', schema: PageOf(Exchange) },
    handle: (ctx, { params, query }) =>
      listExchanges(
        ctx,
        params.tenantId,
        { direction: query.direction, state: query.state },
        pageRequest(query),
      ),
  }),
  endpoint({
    method: 'post',
    path: '/',
    operationId: 'createExchange',
    tag,
    summary: 'Offer the current version of a key to another tenant',
    description:
      "mode public copies only the public key (the receiver can verify or encrypt); mode wrapped encrypts a copy of the material inside the service as a JWE to `wrappingKid`, an active AES, RSA or EC encrypt key of the receiver. The material is never in a response. Offers expire (default 24 h). The answer tells nothing of the receiver's keys: it is the same whether or not `wrappingKid` names a usable key (when it does not, nothing is wrapped and acceptance answers why) and whether or not the receiver already has a key with this kid (acceptance answers that conflict). Suspending or revoking the offered key cancels its pending offers.",
    access: access('create'),
    params: Tenant,
    body: Body(
      {
        kid: Type.String({ minLength: 1, maxLength: 128, description: 'a key of this tenant' }),
        toTenantId: Uuid('another active tenant'),
        mode: Type.Enum(['public', 'wrapped']),
        wrappingKid: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 128,
            description: 'mode wrapped only (and required there): an encrypt key of the receiver',
          }),
        ),
        expiresInSeconds: Type.Optional(
          Type.Integer({ minimum: 60, maximum: 2592000, default: 86400 }),
        ),
      },
      {
        kid: 'release-signing',
        toTenantId: '9b1d7c2e-0a4f-4e5b-8c6d-1f2a3b4c5d6e',
        mode: 'public',
      },
    ),
    answer: { status: 201, description: 'the offer', schema: Exchange },
    problems: {
      404: 'key-not-found (a key of this tenant)',
      409: 'key-suspended or key-revoked',
      422: 'key-usage-mismatch: a symmetric key offered public',
    },
    handle: (ctx, { params, body, actor }) => offerExchange(ctx, params.tenantId, actor, body),
  }),
  endpoint({
    method: 'get',
    path: '/:id',
    operationId: 'getExchange',
    tag,
    summary: 'Read an exchange',
    access: access('read'),
    params: ExchangePath,
    answer: { status: 200, description: 'the exchange', schema: Exchange },
    problems: { 404: 'no such exchange' },
    handle: (ctx, { params }) => readExchange(ctx, params.tenantId, params.id),
  }),
  endpoint({
    method: 'post',
    path: '/:id/accept',
    operationId: 'acceptExchange',
    tag,
    summary: 'Accept an offer (receiving tenant): the key is created here with source exchange',
    access: access('accept'),
    params: ExchangePath,
    body: Body({
      kid: Type.Optional(
        Type.String({ pattern: '^[A-Za-z0-9._:-]{1,128}$', description: 'default exchange-{id}' }),
      ),
    }),
    bodyOptional: true,
    answer: {
      status: 200,
      description: 'the exchange and the new key',
      schema: Type.Object({ exchange: Exchange, key: KeyRecord }),
    },
    problems: {
      403: "missing permission, another tenant's path, or not the receiving tenant",
      404: 'no such exchange, or key-not-found: the wrappingKid of a wrapped offer names no key here',
      409: 'exchange-not-pending; conflict: the kid exists, or the offer was made for a wrappingKid that was not an active encrypt key here (nothing was wrapped); key-suspended or key-revoked: the wrapping key, or the offered key in the offering tenant (re-read under its row lock: nothing is delivered unless it is active)',
      410: 'exchange-expired',
      422: 'policy-violation, or the wrapped payload does not open',
    },
    handle: (ctx, { params, body, actor }) =>
      acceptExchange(ctx, params.tenantId, params.id, actor, body),
  }),
  closeStep('reject', 'Reject an offer (receiving tenant)'),
  closeStep('cancel', 'Withdraw an offer (offering tenant)'),
];
