/** JWKS and RFC 8414 authorization server metadata. */
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { route } from '../http/route.ts';
import { INTROSPECTION_AUTH_METHODS } from '../services/auth/introspection.ts';

/** Mounted at /.well-known. */
export function createWellKnownRouter(ctx: AppContext): Router {
  const router = Router();
  const base = ctx.config.publicBaseUrl;
  route(router, '/jwks.json', {
    get: (_req, res) => {
      res.setHeader('Cache-Control', 'public, max-age=60');
      res.json(ctx.auth.signingKeys.jwks());
    },
  });
  route(router, '/oauth-authorization-server', {
    get: (_req, res) => {
      res.json({
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
      });
    },
  });
  return router;
}
