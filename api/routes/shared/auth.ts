/**
 * The pieces the token-issuing rows share (api/routes/v3/auth.ts, api/routes/legacy/authenticate.ts):
 * example values of one workload's tokens, and the OAuth errors (RFC 6749 5.2) both answer.
 *
 * Tests: test/integration/auth/auth-rows.test.ts, test/integration/admin/openapi.test.ts
 */
import type { ProblemText } from '../../rows/endpoint.ts';

/** Example values: one workload of one tenant, its access and refresh token. */
export const EXAMPLE_TENANT_ID = '3f2c1a9e-5b7d-4c1e-9a2b-6d8e0f1a2b3c';
export const EXAMPLE_CLIENT_ID = '6f1c2b9e-3d4a-4f7b-9a51-0c8e2d7f4b10';
export const EXAMPLE_CLIENT_SECRET = 'b3e0f0a4-8f3e-4c61-a2b7-5d9e1c4f7a22';
export const EXAMPLE_ACCESS_TOKEN =
  'eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCIsImtpZCI6InNrLTIwMjYtMTEifQ.eyJzdWIiOiI2ZjFjMmI5ZSJ9.c2lnbmF0dXJl';
export const EXAMPLE_REFRESH_TOKEN = 'rt_4m9Qx2VhZ0cB7yKp1sLw8eNd3fTg6uJa';

/** 429 of a budget of the Auth API: per client and endpoint, or per sending address. */
export const RATE_LIMITED: ProblemText = {
  text: 'rate limit reached, per client and endpoint',
  errors: ['too_many_requests'],
  headers: { 'Retry-After': 'seconds until a retry may succeed' },
};
