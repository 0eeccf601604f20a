/**
 * The Express application: middleware order, routers per API area, then 404 and the error
 * handler. No listen here (server.ts does that), so tests mount it on port 0.
 */
import express, { type Express } from 'express';
import type { AppContext } from './context.ts';
import { requestContext } from './middleware/request-context.ts';
import { errorHandler, notFound } from './middleware/errors.ts';
import { createHealthRouter } from './routes/health.ts';
import { createDocsRouter } from './routes/docs.ts';

/** Builds the app over a context. */
export function createApp(ctx: AppContext): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', false);
  app.use(requestContext(ctx.logger));
  app.use(ctx.metrics.middleware);
  app.use(createHealthRouter(ctx));
  app.use(createDocsRouter(ctx.config.publicBaseUrl));
  app.use(notFound);
  app.use(errorHandler(ctx.config.publicBaseUrl));
  return app;
}
