/**
 * JWKS and RFC 8414 authorization server metadata, as route rows (mounted at /.well-known).
 *
 * Tests: test/integration/auth/token.test.ts, test/integration/admin/openapi.test.ts,
 *   test/integration/public-base-url.test.ts, test/integration/admin/isolation.test.ts,
 *   test/integration/auth/auth-rows.test.ts, test/integration/auth/client-secret-basic.test.ts, and
 *   1 more under test/integration/
 */
import Type from 'typebox';
import { endpoint } from '../rows/endpoint.ts';
import { Resource } from '../schemas/common.ts';
import { INTROSPECTION_AUTH_METHODS } from '../services/auth/introspection.ts';

const tag = 'auth';
const OPEN = 'clients verify tokens and discover the endpoints with it';

const Jwks = Resource(
  {
    keys: Type.Array(
      Type.Object(
        {
          kty: Type.String(),
          kid: Type.String(),
          alg: Type.Optional(Type.String()),
          use: Type.Optional(Type.Literal('sig')),
        },
        { additionalProperties: true },
      ),
    ),
  },
  {
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
  },
);

const Uri = () => Type.String({ format: 'uri' });
const EXAMPLE_BASE = 'https://keyward.example';

const ServerMetadata = Type.Object(
  {
    issuer: Uri(),
    token_endpoint: Uri(),
    revocation_endpoint: Type.Optional(Uri()),
    introspection_endpoint: Type.Optional(Uri()),
    jwks_uri: Uri(),
    service_documentation: Type.Optional(Uri()),
    introspection_endpoint_auth_methods_supported: Type.Optional(
      Type.Array(Type.Enum([...INTROSPECTION_AUTH_METHODS]), {
        description: 'how a caller of the introspection endpoint authenticates (RFC 7662 2.1)',
      }),
    ),
  },
  {
    additionalProperties: true,
    examples: [
      {
        issuer: EXAMPLE_BASE,
        token_endpoint: `${EXAMPLE_BASE}/api/v3/auth/token`,
        revocation_endpoint: `${EXAMPLE_BASE}/api/v3/auth/token/revoke`,
        introspection_endpoint: `${EXAMPLE_BASE}/api/v3/auth/token/introspect`,
        jwks_uri: `${EXAMPLE_BASE}/.well-known/jwks.json`,
        service_documentation: `${EXAMPLE_BASE}/docs`,
      },
    ],
  },
);

export const WELL_KNOWN_ENDPOINTS = [
  endpoint({
    method: 'get',
    path: '/jwks.json',
    operationId: 'jwks',
    tag,
    summary:
      'Public keys that verify access tokens; a rotated-out key stays until its tokens expire',
    access: { open: OPEN },
    answer: {
      status: 200,
      description: 'JWK Set (RFC 7517)',
      schema: Jwks,
      headers: { 'Cache-Control': 'public, max-age=60' },
    },
    handle: (ctx, { res }) => {
      res.setHeader('Cache-Control', 'public, max-age=60');
      return ctx.auth.signingKeys.jwks();
    },
  }),
  endpoint({
    method: 'get',
    path: '/oauth-authorization-server',
    operationId: 'authorizationServerMetadata',
    tag,
    summary: 'Authorization server metadata (RFC 8414)',
    access: { open: OPEN },
    answer: { status: 200, description: 'metadata', schema: ServerMetadata },
    handle: (ctx) => {
      const base = ctx.config.publicBaseUrl;
      return {
        issuer: base,
        token_endpoint: `${base}/api/v3/auth/token`,
        revocation_endpoint: `${base}/api/v3/auth/token/revoke`,
        introspection_endpoint: `${base}/api/v3/auth/token/introspect`,
        jwks_uri: `${base}/.well-known/jwks.json`,
        grant_types_supported: [
          'client_credentials',
          'password',
          'refresh_token',
          'urn:ietf:params:oauth:grant-type:token-exchange',
        ],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        response_types_supported: [],
        scopes_supported: [],
        service_documentation: `${base}/docs`,
        revocation_endpoint_auth_methods_supported: ['none'],
        // RFC 8414 2: exactly what introspection accepts (RFC 7662 2.1 client authentication, and the caller's bearer token).
        introspection_endpoint_auth_methods_supported: INTROSPECTION_AUTH_METHODS,
        access_token_signing_alg_values_supported: ['ES256'],
      };
    },
  }),
];
