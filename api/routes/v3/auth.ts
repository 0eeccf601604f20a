/**
 * The Auth API: token, revocation (RFC 7009), introspection (RFC 7662),
 * forgot and reset password, as route rows. Open endpoints (they issue the tokens): a client
 * authenticates, where it does, inside the service (HTTP Basic or the form's client_secret).
 * Form-urlencoded only; errors in the OAuth shape `{error, error_description}`.
 *
 * Tests: test/integration/auth/revocation.test.ts, test/integration/admin/openapi.test.ts,
 *   test/integration/auth/password-and-legacy.test.ts,
 *   test/integration/auth/endpoint-budgets.test.ts,
 *   test/integration/auth/subject-revocation.test.ts, test/integration/fanout/faults.test.ts, and 22
 *   more under test/e2e/, test/integration/
 */
import type { IncomingMessage } from 'node:http';
import Type from 'typebox';
import type { AppContext } from '../../context.ts';
import { endpoint } from '../../rows/endpoint.ts';
import { readCanonicalForm } from '../../http/form-body.ts';
import { Resource, Uuid } from '../../schemas/common.ts';
import {
  EXAMPLE_ACCESS_TOKEN,
  EXAMPLE_CLIENT_ID,
  EXAMPLE_CLIENT_SECRET,
  EXAMPLE_REFRESH_TOKEN,
  EXAMPLE_TENANT_ID,
  RATE_LIMITED,
} from '../shared/auth.ts';
import { issueToken, revokePresentedToken } from '../../services/auth/token-endpoint.ts';
import { introspect } from '../../services/auth/introspection.ts';
import { BASIC_CHALLENGE } from '../../services/auth/client-auth.ts';
import { forgotPassword, resetPassword } from '../../services/auth/password-requests.ts';

/**
 * POST /token's core, run by its row on Express and on the runtime lane alike: the form (read
 * and made canonical by the one form reader), then the grant. Trust proxy is off, so the client
 * address is the socket's, as Express's req.ip.
 */
function serveToken(ctx: AppContext, req: IncomingMessage) {
  return readCanonicalForm(req).then((form) =>
    issueToken(ctx, {
      form,
      authorization: req.headers.authorization,
      address: req.socket.remoteAddress ?? 'unknown',
    }),
  );
}

const tag = 'auth';
const OPEN = 'it issues and checks the tokens';

const grant = <P extends Parameters<typeof Type.Object>[0]>(
  value: string,
  properties: P,
  description: string,
) => Type.Object({ grant_type: Type.Literal(value), ...properties }, { description });

/** The four grants (RFC 6749 4.4, 4.3, 6 and RFC 8693); read by the core, so only documented here. */
const TokenRequest = Type.Union(
  [
    grant(
      'client_credentials',
      {
        client_id: Type.Optional(Uuid()),
        client_secret: Type.Optional(Uuid()),
      },
      'client_id and client_secret are required unless they come in an Authorization: Basic header (client_secret_basic)',
    ),
    grant(
      'password',
      {
        username: Type.String({ format: 'email' }),
        password: Type.String(),
        tenant_id: Uuid(),
        remember_me: Type.Optional(Type.Enum(['true', 'false'])),
      },
      'a human user of the tenant',
    ),
    grant('refresh_token', { refresh_token: Type.String() }, 'rotates the refresh token'),
    grant(
      'urn:ietf:params:oauth:grant-type:token-exchange',
      {
        subject_token: Type.String({ description: 'an access token of the acting subject' }),
        subject_token_type: Type.Optional(
          Type.Literal('urn:ietf:params:oauth:token-type:access_token'),
        ),
        resource: Type.String({ pattern: '^urn:keyward:tenant:[0-9a-f-]{36}:(admin|core)$' }),
      },
      'a delegated token for another tenant the subject may act in',
    ),
  ],
  {
    examples: [
      {
        grant_type: 'client_credentials',
        client_id: EXAMPLE_CLIENT_ID,
        client_secret: EXAMPLE_CLIENT_SECRET,
      },
    ],
  },
);

const TokenResponse = Resource(
  {
    access_token: Type.String({
      description:
        'JWT (typ at+jwt): iss, sub, aud (service-admin or service-core), tenantId, permissions, client_id, jti, iat, exp; act for delegated tokens',
    }),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({
      description: 'seconds; client_credentials 36000 by default, token exchange 900',
    }),
    refresh_token: Type.Optional(
      Type.String({ description: 'password and refresh_token grants only; rotates on every use' }),
    ),
    passwordChangeEligible: Type.Optional(Type.Boolean({ description: 'client_credentials only' })),
    issued_token_type: Type.Optional(Type.String({ description: 'token exchange only' })),
  },
  {
    access_token: EXAMPLE_ACCESS_TOKEN,
    token_type: 'Bearer',
    expires_in: 36000,
    passwordChangeEligible: false,
  },
);

const Introspection = Resource(
  {
    active: Type.Boolean(),
    sub: Type.Optional(Type.String()),
    exp: Type.Optional(Type.Integer()),
    iat: Type.Optional(Type.Integer()),
    scope: Type.Optional(Type.String({ description: 'the permissions, space-separated' })),
    client_id: Type.Optional(Type.String()),
    aud: Type.Optional(Type.String()),
    iss: Type.Optional(Type.String()),
    jti: Type.Optional(Type.String()),
    token_type: Type.Optional(Type.Literal('Bearer')),
    tenantId: Type.Optional(Uuid()),
    act: Type.Optional(
      Type.Object({ sub: Type.Optional(Type.String()), tenantId: Type.Optional(Uuid()) }),
    ),
  },
  {
    active: true,
    sub: EXAMPLE_CLIENT_ID,
    client_id: EXAMPLE_CLIENT_ID,
    aud: 'service-core',
    iss: 'https://keyward.example',
    jti: 'b7e2c0d4-9f1a-4c3b-8d5e-6a7b8c9d0e1f',
    token_type: 'Bearer',
    tenantId: EXAMPLE_TENANT_ID,
    scope: 'crypto.encrypt crypto.decrypt',
    iat: 1795449600,
    exp: 1795485600,
  },
);

/** A field the service reads as missing when empty. */
const Given = (description?: string) =>
  Type.String({ minLength: 1, ...(description ? { description } : {}) });

/** The answer of a form that is not a form (the one form reader, api/http/form-body.ts). */
const NOT_A_FORM = 'the body is not a form, or a field is missing, repeated or malformed';
const FORM_ERRORS = ['invalid_request', 'unsupported_grant_type'];

export const AUTH_ENDPOINTS = [
  endpoint({
    method: 'post',
    path: '/token',
    operationId: 'token',
    tag,
    summary: 'Issue an access token (client_credentials, password, refresh_token, token exchange)',
    description:
      "Form-urlencoded only (RFC 6749 section 4); a JSON body or another media type is unsupported_grant_type. No scope is requested: the token carries the permissions of the identity's role. " +
      'For client_credentials the workload authenticates either with client_id and client_secret in the form (client_secret_post) or with `Authorization: Basic base64(urlencode(client_id):urlencode(client_secret))` (client_secret_basic, RFC 6749 section 2.3.1; the form then holds the grant type only), never both: a client_secret in the form beside Basic, or a form client_id naming another client, is invalid_request. ' +
      'Over Basic every failed client authentication (unknown, disabled, wrong secret, undecodable header) is 401 invalid_client with `WWW-Authenticate: Basic` (RFC 6749 section 5.2); in the form a wrong secret stays 400 invalid_grant. Basic credentials on a grant that authenticates no client are invalid_request. Both methods, on this path and on the legacy login, spend the same budget of the client at the sending address: wrong secrets from one address never refuse the right secret from another. A client_id naming no workload spends the budget of the sending address (429 for every client_credentials request from it naming no workload once spent), and such failures are audited as one tallied event per address and second (actor `client:unknown`).',
    access: { open: OPEN },
    // No bearer token; a workload may authenticate by HTTP Basic (client_secret_basic) instead of the form fields.
    security: [{}, { clientSecretBasic: [] }],
    // Token issuance is called all day by workloads: the runtime lane serves it too.
    lane: true,
    // The core reads the form and checks the grant.
    request: { media: { 'application/x-www-form-urlencoded': { schema: TokenRequest } } },
    errors: 'oauth',
    answer: {
      status: 200,
      description: 'the token response',
      schema: TokenResponse,
      headers: { 'Cache-Control': 'no-store' },
    },
    problems: {
      400: {
        text: 'missing field, malformed body, JSON body, wrong secret (form) or password, bad resource, credentials both in the header and the body',
        errors: ['invalid_request', 'unsupported_grant_type', 'invalid_grant', 'invalid_target'],
      },
      401: {
        text: 'client_id unknown, the workload or its tenant disabled, or any failed HTTP Basic client authentication',
        errors: ['invalid_client'],
        headers: { 'WWW-Authenticate': BASIC_CHALLENGE },
      },
      429: RATE_LIMITED,
    },
    handle: (ctx, { req }) => serveToken(ctx, req),
  }),

  endpoint({
    method: 'post',
    path: '/token/revoke',
    operationId: 'revokeToken',
    tag,
    summary: 'Revoke an access or refresh token (RFC 7009)',
    description:
      'Answers 200 whether or not the token existed (RFC 7009 section 2.2). Revoking a refresh token revokes its whole family. The token_type_hint is not needed: the token is found either way.',
    access: { open: OPEN },
    body: Resource(
      {
        token: Type.Optional(Type.String()),
        token_type_hint: Type.Optional(
          Type.String({ description: 'access_token or refresh_token (RFC 7009 2.1)' }),
        ),
      },
      { token: EXAMPLE_REFRESH_TOKEN, token_type_hint: 'refresh_token' },
    ),
    bodyMedia: 'form',
    errors: 'oauth',
    answer: {
      status: 200,
      description: 'revoked, or nothing to revoke',
      schema: Type.Object({}, { examples: [{}] }),
    },
    problems: { 400: { text: NOT_A_FORM, errors: FORM_ERRORS } },
    handle: async (ctx, { body }) => {
      await revokePresentedToken(ctx, body.token);
      // RFC 7009 section 2.2: 200 whether or not the token existed.
      return {};
    },
  }),

  endpoint({
    method: 'post',
    path: '/token/introspect',
    operationId: 'introspectToken',
    tag,
    summary: 'Introspect a token (RFC 7662)',
    description:
      'The caller authenticates in one of three ways (RFC 7662 section 2.1; the metadata lists them in `introspection_endpoint_auth_methods_supported`): ' +
      'its own bearer token (`bearer`): it may inspect that token, and any token with admin.platform.introspect; ' +
      "a workload's client credentials in `Authorization: Basic base64(urlencode(client_id):urlencode(client_secret))` (`client_secret_basic`) or as client_id and client_secret in the form (`client_secret_post`), as a resource server does: a workload holding auth.introspect.self may inspect the tokens issued to it (the same client_id), one holding admin.platform.introspect (platform tenant only) any token, and one holding neither is refused with 403 unauthorized_client. " +
      'A token the caller may not inspect answers `{active: false}`, as an unknown, expired or revoked one does (RFC 7662 section 2.2). ' +
      'Failed client authentication (unknown or disabled client, wrong secret, undecodable Basic header) is 401 invalid_client with a `WWW-Authenticate: Basic` challenge and spends the same failure budget as the token endpoint (the client at the sending address); once spent, 429. No credentials at all is 401 with Bearer and Basic challenges; a bearer token beside client credentials in the form, or Basic beside a client_secret in the form, is invalid_request.',
    access: { open: 'the caller authenticates inside the service' },
    // client_secret_post (credentials in the form) has no OpenAPI security scheme: the description and the body state it.
    security: [{ bearer: [] }, { clientSecretBasic: [] }],
    body: Resource(
      {
        token: Given(),
        token_type_hint: Type.Optional(Type.String()),
        client_id: Type.Optional(Type.String({ description: 'client_secret_post only' })),
        client_secret: Type.Optional(Type.String({ description: 'client_secret_post only' })),
      },
      { token: EXAMPLE_ACCESS_TOKEN },
    ),
    bodyMedia: 'form',
    errors: 'oauth',
    answer: { status: 200, description: "the token's state and claims", schema: Introspection },
    problems: {
      400: { text: 'token missing or body malformed', errors: FORM_ERRORS },
      401: {
        text: 'no valid bearer token of the caller, or client authentication failed',
        errors: ['invalid_client'],
        headers: {
          'WWW-Authenticate':
            'Basic after failed client authentication; Bearer and Basic when no credentials were sent',
        },
      },
      403: {
        text: 'the client holds no introspection permission',
        errors: ['unauthorized_client'],
      },
      429: RATE_LIMITED,
    },
    handle: (ctx, { body, req }) =>
      introspect(ctx, {
        form: body,
        authorization: req.headers.authorization,
        // The socket's address, as the token endpoint keys its budgets (trust proxy is off).
        address: req.socket.remoteAddress ?? 'unknown',
      }),
  }),

  endpoint({
    method: 'post',
    path: '/password/forgot',
    operationId: 'forgotPassword',
    tag,
    summary: 'Start a password reset (e-mail link)',
    description:
      'The same 202 whether or not the address is registered, written before any work on the account: the lookup, the reset token and the mail run afterwards, in the background, so the answer takes as long for a registered address as for any other. A registered, enabled user receives a one-time reset link (at most 3 an hour); a mail that cannot be sent is logged, not reported. 429 when the sending address exceeds 20 requests a minute.',
    access: { open: 'the user has lost the password' },
    body: Resource(
      {
        email: Given('the e-mail address of the account'),
        tenant_id: Given('the tenant id (a UUID) of the account'),
      },
      { email: 'ops@acme.example', tenant_id: EXAMPLE_TENANT_ID },
    ),
    bodyMedia: 'form',
    errors: 'oauth',
    answer: {
      status: 202,
      description: 'accepted',
      schema: Resource(
        { status: Type.Literal('accepted'), message: Type.String() },
        { status: 'accepted', message: 'if the address is registered, a reset link has been sent' },
      ),
    },
    problems: {
      400: { text: 'email or tenant_id missing', errors: FORM_ERRORS },
      429: RATE_LIMITED,
    },
    handle: async (ctx, { body, req }) => {
      await forgotPassword(
        ctx,
        { email: body.email, tenantId: body.tenant_id },
        req.ip ?? 'unknown',
      );
      // The same answer for known and unknown addresses, written before any work on the
      // account: that runs as a background task, on a later turn of the event loop.
      return {
        status: 'accepted' as const,
        message: 'if the address is registered, a reset link has been sent',
      };
    },
  }),

  endpoint({
    method: 'post',
    path: '/password/reset',
    operationId: 'resetPassword',
    tag,
    summary: 'Complete a password reset with the mailed token',
    description: 'The new password must meet the password policy (at least 12 characters).',
    access: { open: 'the mailed token authenticates the user' },
    body: Resource(
      { token: Given(), password: Given() },
      { token: 'pr_Zk3v9QeT1yW7nB0xLc5sHa2m', password: 'correct horse battery staple' },
    ),
    bodyMedia: 'form',
    errors: 'oauth',
    answer: {
      status: 200,
      description: 'password changed',
      schema: Resource(
        { status: Type.Literal('password-changed') },
        { status: 'password-changed' },
      ),
    },
    problems: {
      400: {
        text: 'token unknown, used or expired, or the password too weak',
        errors: FORM_ERRORS,
      },
    },
    handle: async (ctx, { body, req }) => {
      await resetPassword(ctx, body, req.ip ?? 'unknown');
      return { status: 'password-changed' as const };
    },
  }),
];
