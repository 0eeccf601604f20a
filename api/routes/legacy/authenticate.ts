/**
 * The legacy JSON login (`POST /api/authenticate/app`) and its refresh call, as
 * route rows: open (these calls issue the tokens), JSON bodies of at most 16 KiB, errors in the
 * OAuth shape (a body that is not a JSON object is invalid_request).
 *
 * Tests: test/integration/admin/openapi.test.ts,
 *   test/integration/auth/password-and-legacy.test.ts, test/integration/auth/auth-rows.test.ts,
 *   test/integration/auth/unauthenticated-abuse.test.ts,
 *   test/integration/auth/endpoint-budgets.test.ts, test/integration/auth/token-abuse.test.ts, and 7
 *   more under test/integration/
 */
import Type from 'typebox';
import { endpoint, type Answer } from '../../rows/endpoint.ts';
import { Resource } from '../../schemas/common.ts';
import {
  EXAMPLE_ACCESS_TOKEN,
  EXAMPLE_CLIENT_ID,
  EXAMPLE_CLIENT_SECRET,
  EXAMPLE_REFRESH_TOKEN,
  RATE_LIMITED,
} from '../shared/auth.ts';
import { legacyLogin, legacyRefresh } from '../../services/auth/legacy-login.ts';

const LegacyTokens = (example: unknown) =>
  Resource(
    {
      accessToken: Type.String({
        description: 'JWT carrying the legacy role names in `scopes`',
      }),
      refreshToken: Type.String(),
      tokenType: Type.Optional(Type.Literal('Bearer')),
      expiresIn: Type.Optional(Type.Integer()),
    },
    example,
  );

const tokens = (example: unknown): Answer => ({
  status: 200,
  description: 'access and refresh token',
  schema: LegacyTokens(example),
  headers: { 'Cache-Control': 'no-store' },
});

/** A legacy body is small: a client id and secret, or a refresh token. */
const LIMIT = 16 * 1024;
const tag = 'legacy';

export const LEGACY_AUTH_ENDPOINTS = [
  endpoint({
    method: 'post',
    path: '/app',
    operationId: 'legacyLogin',
    tag,
    summary: 'Legacy JSON login of a workload',
    access: { open: 'it issues the tokens' },
    body: Resource(
      {
        clientId: Type.String({ description: 'the workload id (a UUID)' }),
        clientSecret: Type.String(),
      },
      { clientId: EXAMPLE_CLIENT_ID, clientSecret: EXAMPLE_CLIENT_SECRET },
    ),
    bodyLimit: LIMIT,
    errors: 'oauth',
    answer: tokens({
      accessToken: EXAMPLE_ACCESS_TOKEN,
      refreshToken: EXAMPLE_REFRESH_TOKEN,
      tokenType: 'Bearer',
      expiresIn: 3600,
    }),
    problems: {
      400: { text: 'malformed body or wrong secret', errors: ['invalid_request', 'invalid_grant'] },
      401: { text: 'unknown or disabled client', errors: ['invalid_client'] },
      429: RATE_LIMITED,
    },
    // Never cached: the area's first router sets Cache-Control: no-store (api/routes/index.ts).
    handle: (ctx, { body, req }) => legacyLogin(ctx, body, req.ip ?? 'unknown'),
  }),
  endpoint({
    method: 'post',
    path: '/refresh',
    operationId: 'legacyRefresh',
    tag,
    summary: 'Legacy refresh: a new access token and a rotated refresh token',
    access: { open: 'the refresh token authenticates the client' },
    body: Resource({ refreshToken: Type.String() }, { refreshToken: EXAMPLE_REFRESH_TOKEN }),
    bodyLimit: LIMIT,
    errors: 'oauth',
    answer: tokens({
      accessToken: EXAMPLE_ACCESS_TOKEN,
      refreshToken: 'rt_8pLw2sKx5nQv0cRz7yTb4mHd1gFj',
      tokenType: 'Bearer',
      expiresIn: 3600,
    }),
    problems: {
      400: {
        text: 'malformed body, or the refresh token is not valid',
        errors: ['invalid_request', 'invalid_grant'],
      },
      429: RATE_LIMITED,
    },
    // Never cached: the area's first router sets Cache-Control: no-store (api/routes/index.ts).
    handle: (ctx, { body, req }) => legacyRefresh(ctx, body, req.ip ?? 'unknown'),
  }),
];
