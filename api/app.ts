/**
 * The Express application: middleware order, routers per API area, then 404 and the error
 * handler. No listen here (server.ts does that), so tests mount it on port 0.
 */
import express, { type Express } from 'express';
import type { RequestListener } from 'node:http';
import { createRuntimeLane } from './runtime-lane.ts';
import type { AppContext } from './context.ts';
import { requestContext } from './middleware/request-context.ts';
import { errorHandler, notFound } from './middleware/errors.ts';
import { canonicalEntry } from './http/params.ts';
import { createHealthRouter } from './routes/health.ts';
import { createDocsRouter } from './routes/docs.ts';
import { createAuthRouter } from './routes/auth.ts';
import { createWellKnownRouter } from './routes/well-known.ts';
import { createLegacyAuthRouter } from './routes/legacy-auth.ts';
import { createLegacyMigrationRouter } from './routes/legacy-migration.ts';
import { createMigrationAliasRouter, createMigrationStreamRouter } from './routes/migration.ts';
import { createCryptoStreamRouter } from './routes/crypto-stream.ts';
import { createAdminRouter } from './routes/admin/index.ts';
import { authenticate } from './middleware/authenticate.ts';
import { createCryptoRouter } from './routes/crypto.ts';
import { createPqcRouter } from './routes/pqc.ts';
import { createAuditRouter } from './routes/audit.ts';
import { createLegacyRouter } from './routes/legacy.ts';
import { AUDIENCE_ADMIN, AUDIENCE_CORE } from './services/auth/access-tokens.ts';
import { createJobsRouter } from './routes/jobs.ts';

/** Builds the app over a context. */
export function createApp(ctx: AppContext): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', false);
  app.use(requestContext(app, ctx.logger));
  app.use(ctx.metrics.middleware);
  app.use(canonicalEntry);
  app.use(createHealthRouter(ctx));
  app.use(createDocsRouter(ctx.config.publicBaseUrl));
  app.use(createWellKnownRouter(ctx));
  app.use('/api/v3/auth', createAuthRouter(ctx));
  app.use(createLegacyAuthRouter(ctx));
  app.use(createLegacyMigrationRouter(ctx));
  app.use(createMigrationAliasRouter(ctx));
  app.use('/api/v3/admin', authenticate(ctx, [AUDIENCE_ADMIN]));
  app.use('/api/v3/admin', createAdminRouter(ctx));
  app.use(['/api/v3/crypto', '/api/v3/pqc', '/api/v3/audit'], authenticate(ctx, [AUDIENCE_CORE]));
  app.use('/api/v3/crypto', createCryptoRouter(ctx));
  app.use('/api/v3/crypto/stream', createCryptoStreamRouter(ctx));
  app.use('/api/v3/pqc', createPqcRouter(ctx));
  app.use('/api/v3/audit', createAuditRouter(ctx));
  app.use(createLegacyRouter(ctx));
  app.use('/api/v3/migration', authenticate(ctx, [AUDIENCE_ADMIN, AUDIENCE_CORE]));
  app.use('/api/v3/migration/stream', createMigrationStreamRouter(ctx));
  app.use('/api/v3/migration', createJobsRouter(ctx));
  app.use(notFound);
  app.use(errorHandler(ctx.config.publicBaseUrl));
  return app;
}

/** The HTTP request listener: the runtime lane for the hot crypto endpoints, Express for the rest. */
export function createRequestListener(ctx: AppContext): RequestListener {
  const app = createApp(ctx);
  const lane = createRuntimeLane(ctx);
  return (req, res) => {
    if (!lane(req, res)) app(req, res);
  };
}
