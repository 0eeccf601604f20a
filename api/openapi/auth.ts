/**
 * OpenAPI paths of the Auth API (spec 2.1-2.4, 5, 7.1): the token endpoint with its four
 * grants, revocation (RFC 7009), introspection (RFC 7662), the forgot/reset password flow, the
 * legacy JSON login of spec 4.2, the JWKS and the RFC 8414 metadata. Errors here use the OAuth
 * shape `{error, error_description}` (RFC 6749 section 5.2), not problem details.
 */
import { jsonResponse } from './components.ts';

const FORM = 'application/x-www-form-urlencoded';
const open = { security: [] };
const tags = ['auth'];

const oauthError = (description: string, codes: string[], headers?: Record<string, unknown>) => ({
  description: `${description} (error: ${codes.join(', ')})`,
  ...(headers ? { headers } : {}),
  content: {
    'application/json': {
      schema: {
        allOf: [
          { $ref: '#/components/schemas/OAuthError' },
          { properties: { error: { enum: codes } } },
        ],
      },
    },
  },
});

const retryAfter = {
  'Retry-After': { description: 'seconds until a retry may succeed', schema: { type: 'integer' } },
};
const rateLimited = oauthError(
  'rate limit reached, per client and endpoint',
  ['too_many_requests'],
  retryAfter,
);
const form = (schema: Record<string, unknown>, example?: unknown) => ({
  required: true,
  content: { [FORM]: { schema, ...(example === undefined ? {} : { example }) } },
});
const json = (schema: Record<string, unknown>, example: unknown) => ({
  required: true,
  content: { 'application/json': { schema, example } },
});
const ok = jsonResponse;

// Example values shared by the operations: one workload of one tenant.
const TENANT_ID = '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c';
const CLIENT_ID = '6f1c2b9e-3d4a-4f7b-9a51-0c8e2d7f4b10';
const ACCESS_TOKEN =
  'eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCIsImtpZCI6InNrLTIwMjYtMTEifQ.eyJzdWIiOiI2ZjFjMmI5ZSJ9.c2lnbmF0dXJl';
const REFRESH_TOKEN = 'rt_4m9Qx2VhZ0cB7yKp1sLw8eNd3fTg6uJa';

const uuid = { type: 'string', format: 'uuid' };
const grant = (value: string, properties: Record<string, unknown>, required: string[]) => ({
  type: 'object',
  required: ['grant_type', ...required],
  properties: { grant_type: { const: value }, ...properties },
});

const TokenRequest = {
  oneOf: [
    // client_id and client_secret are required unless they come in an Authorization: Basic header (client_secret_basic).
    grant('client_credentials', { client_id: uuid, client_secret: uuid }, []),
    grant(
      'password',
      {
        username: { type: 'string', format: 'email' },
        password: { type: 'string' },
        tenant_id: uuid,
        remember_me: { type: 'string', enum: ['true', 'false'] },
      },
      ['username', 'password', 'tenant_id'],
    ),
    grant('refresh_token', { refresh_token: { type: 'string' } }, ['refresh_token']),
    grant(
      'urn:ietf:params:oauth:grant-type:token-exchange',
      {
        subject_token: { type: 'string', description: 'an access token of the acting subject' },
        subject_token_type: { const: 'urn:ietf:params:oauth:token-type:access_token' },
        resource: { type: 'string', pattern: '^urn:keyward:tenant:[0-9a-f-]{36}:(admin|core)$' },
      },
      ['subject_token', 'resource'],
    ),
  ],
};

const TokenResponse = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_in'],
  properties: {
    access_token: {
      type: 'string',
      description:
        'JWT (typ at+jwt): iss, sub, aud (service-admin or service-core), tenantId, permissions, client_id, jti, iat, exp; act for delegated tokens',
    },
    token_type: { const: 'Bearer' },
    expires_in: {
      type: 'integer',
      description: 'seconds; client_credentials 36000 by default, token exchange 900',
    },
    refresh_token: {
      type: 'string',
      description: 'password and refresh_token grants only; rotates on every use',
    },
    passwordChangeEligible: { type: 'boolean', description: 'client_credentials only' },
    issued_token_type: { type: 'string', description: 'token exchange only' },
  },
};

const Introspection = {
  type: 'object',
  required: ['active'],
  properties: {
    active: { type: 'boolean' },
    sub: { type: 'string' },
    exp: { type: 'integer' },
    iat: { type: 'integer' },
    scope: { type: 'string', description: 'the permissions, space-separated' },
    client_id: { type: 'string' },
    aud: { type: 'string' },
    iss: { type: 'string' },
    jti: { type: 'string' },
    token_type: { const: 'Bearer' },
    tenantId: uuid,
    act: { type: 'object', properties: { sub: { type: 'string' }, tenantId: uuid } },
  },
};

const LegacyTokens = {
  type: 'object',
  required: ['accessToken', 'refreshToken'],
  properties: {
    accessToken: { type: 'string', description: 'JWT carrying the legacy role names in `scopes`' },
    refreshToken: { type: 'string' },
    tokenType: { const: 'Bearer' },
    expiresIn: { type: 'integer' },
  },
};

const Jwks = {
  type: 'object',
  required: ['keys'],
  properties: {
    keys: {
      type: 'array',
      items: {
        type: 'object',
        required: ['kty', 'kid'],
        properties: {
          kty: { type: 'string' },
          kid: { type: 'string' },
          alg: { type: 'string' },
          use: { const: 'sig' },
        },
        additionalProperties: true,
      },
    },
  },
};

const ServerMetadata = {
  type: 'object',
  required: ['issuer', 'token_endpoint', 'jwks_uri'],
  properties: Object.fromEntries(
    [
      'issuer',
      'token_endpoint',
      'revocation_endpoint',
      'introspection_endpoint',
      'jwks_uri',
      'service_documentation',
    ]
      .map((k): [string, unknown] => [k, { type: 'string', format: 'uri' }])
      .concat([
        [
          'introspection_endpoint_auth_methods_supported',
          {
            type: 'array',
            items: { enum: ['client_secret_basic', 'client_secret_post', 'bearer'] },
            description: 'how a caller of the introspection endpoint authenticates (RFC 7662 2.1)',
          },
        ],
      ]),
  ),
  additionalProperties: true,
};

export const authPaths = {
  '/api/v3/auth/token': {
    post: {
      // No bearer token; a workload may authenticate by HTTP Basic (client_secret_basic) instead of the form fields.
      security: [{}, { clientSecretBasic: [] }],
      tags,
      operationId: 'token',
      summary:
        'Issue an access token (client_credentials, password, refresh_token, token exchange)',
      description:
        "Form-urlencoded only (RFC 6749 section 4); a JSON body or another media type is unsupported_grant_type. No scope is requested: the token carries the permissions of the identity's role. " +
        'For client_credentials the workload authenticates either with client_id and client_secret in the form (client_secret_post) or with `Authorization: Basic base64(urlencode(client_id):urlencode(client_secret))` (client_secret_basic, RFC 6749 section 2.3.1), never both: a client_secret in the form beside Basic, or a form client_id naming another client, is invalid_request. ' +
        'Over Basic every failed client authentication (unknown, disabled, wrong secret, undecodable header) is 401 invalid_client with `WWW-Authenticate: Basic` (RFC 6749 section 5.2); in the form a wrong secret stays 400 invalid_grant (spec 7.1). Basic credentials on a grant that authenticates no client are invalid_request. Both methods, on this path and on the legacy login, spend the same budget of the client at the sending address: wrong secrets from one address never refuse the right secret from another. A client_id naming no workload spends the budget of the sending address (429 for every client_credentials request from it naming no workload once spent), and such failures are audited as one tallied event per address and second (actor `client:unknown`).',
      requestBody: {
        ...form(TokenRequest),
        content: {
          [FORM]: {
            schema: TokenRequest,
            examples: {
              clientSecretPost: {
                summary: 'client_credentials, credentials in the form',
                value: {
                  grant_type: 'client_credentials',
                  client_id: '6f1c2b9e-3d4a-4f7b-9a51-0c8e2d7f4b10',
                  client_secret: 'b3e0f0a4-8f3e-4c61-a2b7-5d9e1c4f7a22',
                },
              },
              clientSecretBasic: {
                summary:
                  'client_credentials with Authorization: Basic NmYxYzJi... (client_secret_basic); the form holds the grant type only',
                value: { grant_type: 'client_credentials' },
              },
            },
          },
        },
      },
      responses: {
        200: {
          ...ok('the token response (spec 2.2)', TokenResponse, {
            access_token: ACCESS_TOKEN,
            token_type: 'Bearer',
            expires_in: 36000,
            passwordChangeEligible: false,
          }),
          headers: { 'Cache-Control': { schema: { const: 'no-store' } } },
        },
        400: oauthError(
          'missing field, malformed body, JSON body, wrong secret (form) or password, bad resource, credentials both in the header and the body',
          ['invalid_request', 'unsupported_grant_type', 'invalid_grant', 'invalid_target'],
        ),
        401: oauthError(
          'client_id unknown, the workload or its tenant disabled, or any failed HTTP Basic client authentication',
          ['invalid_client'],
          {
            'WWW-Authenticate': {
              description: 'Basic realm="keyward"',
              schema: { type: 'string' },
            },
          },
        ),
        429: rateLimited,
      },
    },
  },
  '/api/v3/auth/token/revoke': {
    post: {
      ...open,
      tags,
      operationId: 'revokeToken',
      summary: 'Revoke an access or refresh token (RFC 7009)',
      description:
        'Answers 200 whether or not the token existed (spec 3.1, RFC 7009 section 2.2). Revoking a refresh token revokes its whole family.',
      requestBody: form(
        {
          type: 'object',
          properties: {
            token: { type: 'string' },
            token_type_hint: { type: 'string', enum: ['access_token', 'refresh_token'] },
          },
        },
        { token: REFRESH_TOKEN, token_type_hint: 'refresh_token' },
      ),
      responses: {
        200: ok('revoked, or nothing to revoke', { type: 'object' }, {}),
        400: oauthError('the body is not a form', ['invalid_request', 'unsupported_grant_type']),
      },
    },
  },
  '/api/v3/auth/token/introspect': {
    post: {
      tags,
      // The caller's bearer token or a workload's client_secret_basic; client_secret_post (credentials
      // in the form) has no OpenAPI security scheme and is stated in the description and the body.
      security: [{ bearer: [] }, { clientSecretBasic: [] }],
      operationId: 'introspectToken',
      summary: 'Introspect a token (RFC 7662)',
      description:
        'The caller authenticates in one of three ways (RFC 7662 section 2.1; the metadata lists them in `introspection_endpoint_auth_methods_supported`): ' +
        'its own bearer token (`bearer`): it may inspect that token, and any token with admin.platform.introspect; ' +
        "a workload's client credentials in `Authorization: Basic base64(urlencode(client_id):urlencode(client_secret))` (`client_secret_basic`) or as client_id and client_secret in the form (`client_secret_post`), as a resource server does: a workload holding auth.introspect.self may inspect the tokens issued to it (the same client_id), one holding admin.platform.introspect (platform tenant only) any token, and one holding neither is refused with 403 unauthorized_client. " +
        'A token the caller may not inspect answers `{active: false}`, as an unknown, expired or revoked one does (RFC 7662 section 2.2). ' +
        'Failed client authentication (unknown or disabled client, wrong secret, undecodable Basic header) is 401 invalid_client with a `WWW-Authenticate: Basic` challenge and spends the same failure budget as the token endpoint (the client at the sending address); once spent, 429. No credentials at all is 401 with Bearer and Basic challenges; a bearer token beside client credentials in the form, or Basic beside a client_secret in the form, is invalid_request.',
      requestBody: form(
        {
          type: 'object',
          required: ['token'],
          properties: {
            token: { type: 'string' },
            token_type_hint: { type: 'string' },
            client_id: { type: 'string', description: 'client_secret_post only' },
            client_secret: { type: 'string', description: 'client_secret_post only' },
          },
        },
        { token: ACCESS_TOKEN },
      ),
      responses: {
        200: ok("the token's state and claims", Introspection, {
          active: true,
          sub: CLIENT_ID,
          client_id: CLIENT_ID,
          aud: 'service-core',
          iss: 'https://keyward.example',
          jti: 'b7e2c0d4-9f1a-4c3b-8d5e-6a7b8c9d0e1f',
          token_type: 'Bearer',
          tenantId: TENANT_ID,
          scope: 'crypto.encrypt crypto.decrypt',
          iat: 1795449600,
          exp: 1795485600,
        }),
        400: oauthError('token missing or body malformed', [
          'invalid_request',
          'unsupported_grant_type',
        ]),
        401: oauthError(
          'no valid bearer token of the caller, or client authentication failed',
          ['invalid_client'],
          {
            'WWW-Authenticate': {
              description:
                'Basic after failed client authentication; Bearer and Basic when no credentials were sent',
              schema: { type: 'string' },
            },
          },
        ),
        403: oauthError('the client holds no introspection permission', ['unauthorized_client']),
        429: rateLimited,
      },
    },
  },
  '/api/v3/auth/password/forgot': {
    post: {
      ...open,
      tags,
      operationId: 'forgotPassword',
      summary: 'Start a password reset (e-mail link)',
      description:
        'The same 202 whether or not the address is registered, written before any work on the account: the lookup, the reset token and the mail run afterwards, in the background, so the answer takes as long for a registered address as for any other. A registered, enabled user receives a one-time reset link (at most 3 an hour); a mail that cannot be sent is logged, not reported. 429 when the sending address exceeds 20 requests a minute.',
      requestBody: form(
        {
          type: 'object',
          required: ['email', 'tenant_id'],
          properties: { email: { type: 'string', format: 'email' }, tenant_id: uuid },
        },
        { email: 'ops@acme.example', tenant_id: TENANT_ID },
      ),
      responses: {
        202: ok(
          'accepted',
          {
            type: 'object',
            properties: { status: { const: 'accepted' }, message: { type: 'string' } },
          },
          {
            status: 'accepted',
            message: 'if the address is registered, a reset link has been sent',
          },
        ),
        400: oauthError('email or tenant_id missing', [
          'invalid_request',
          'unsupported_grant_type',
        ]),
        429: rateLimited,
      },
    },
  },
  '/api/v3/auth/password/reset': {
    post: {
      ...open,
      tags,
      operationId: 'resetPassword',
      summary: 'Complete a password reset with the mailed token',
      requestBody: form(
        {
          type: 'object',
          required: ['token', 'password'],
          properties: { token: { type: 'string' }, password: { type: 'string', minLength: 12 } },
        },
        { token: 'pr_Zk3v9QeT1yW7nB0xLc5sHa2m', password: 'correct horse battery staple' },
      ),
      responses: {
        200: ok(
          'password changed',
          { type: 'object', properties: { status: { const: 'password-changed' } } },
          { status: 'password-changed' },
        ),
        400: oauthError('token unknown, used or expired, or the password too weak', [
          'invalid_request',
          'unsupported_grant_type',
        ]),
      },
    },
  },
  '/api/authenticate/app': {
    post: {
      ...open,
      tags: ['legacy'],
      operationId: 'legacyLogin',
      summary: 'Legacy JSON login of a workload (spec 4.2)',
      requestBody: json(
        {
          type: 'object',
          required: ['clientId', 'clientSecret'],
          properties: { clientId: uuid, clientSecret: { type: 'string' } },
        },
        { clientId: CLIENT_ID, clientSecret: 'b3e0f0a4-8f3e-4c61-a2b7-5d9e1c4f7a22' },
      ),
      responses: {
        200: ok('access and refresh token', LegacyTokens, {
          accessToken: ACCESS_TOKEN,
          refreshToken: REFRESH_TOKEN,
          tokenType: 'Bearer',
          expiresIn: 3600,
        }),
        400: oauthError('malformed body or wrong secret', ['invalid_request', 'invalid_grant']),
        401: oauthError('unknown or disabled client', ['invalid_client']),
      },
    },
  },
  '/api/authenticate/refresh': {
    post: {
      ...open,
      tags: ['legacy'],
      operationId: 'legacyRefresh',
      summary: 'Legacy refresh: a new access token and a rotated refresh token',
      requestBody: json(
        {
          type: 'object',
          required: ['refreshToken'],
          properties: { refreshToken: { type: 'string' } },
        },
        { refreshToken: REFRESH_TOKEN },
      ),
      responses: {
        200: ok('access and refresh token', LegacyTokens, {
          accessToken: ACCESS_TOKEN,
          refreshToken: 'rt_8pLw2sKx5nQv0cRz7yTb4mHd1gFj',
          tokenType: 'Bearer',
          expiresIn: 3600,
        }),
        400: oauthError('malformed body, or the refresh token is not valid', [
          'invalid_request',
          'invalid_grant',
        ]),
      },
    },
  },
  '/.well-known/jwks.json': {
    get: {
      ...open,
      tags,
      operationId: 'jwks',
      summary:
        'Public keys that verify access tokens; a rotated-out key stays until its tokens expire',
      responses: {
        200: ok('JWK Set (RFC 7517)', Jwks, {
          keys: [
            {
              kty: 'EC',
              crv: 'P-256',
              x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
              y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
              kid: 'sk-2026-11',
              alg: 'ES256',
              use: 'sig',
            },
          ],
        }),
      },
    },
  },
  '/.well-known/oauth-authorization-server': {
    get: {
      ...open,
      tags,
      operationId: 'authorizationServerMetadata',
      summary: 'Authorization server metadata (RFC 8414)',
      responses: {
        200: ok(
          'metadata',
          ServerMetadata,
          Object.fromEntries(
            [
              ['issuer', ''],
              ['token_endpoint', '/api/v3/auth/token'],
              ['revocation_endpoint', '/api/v3/auth/token/revoke'],
              ['introspection_endpoint', '/api/v3/auth/token/introspect'],
              ['jwks_uri', '/.well-known/jwks.json'],
              ['service_documentation', '/docs'],
            ].map(([k, p]) => [k, `https://keyward.example${p}`]),
          ),
        ),
      },
    },
  },
};
