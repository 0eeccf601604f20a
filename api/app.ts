/**
 * The Express application: middleware order, the routers of the route table
 * (api/routes/index.ts), then 404 and the error handler. No listen here (server.ts does that),
 * so tests mount it on port 0.
 */
import express, { type Express } from 'express';
import type { RequestListener } from 'node:http';
import { createRuntimeLane } from './runtime-lane.ts';
import type { AppContext } from './context.ts';
import { requestContext } from './middleware/request-context.ts';
import { accessLog } from './middleware/access-log.ts';
import { errorHandler, noStore, notFound, oauthNotFound } from './middleware/errors.ts';
import { canonicalEntry } from './http/params.ts';
import { authenticate, tenantScope } from './middleware/authenticate.ts';
import { ROUTE_TABLE, assertAreaAccess, mountPath, mountRouters } from './routes/index.ts';

/** Builds the app over a context. */
export function createApp(ctx: AppContext): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', false);
  app.use(requestContext(app, ctx.logger));
  app.use(accessLog(ctx.accessLog, ctx.metrics));
  app.use(canonicalEntry);
  assertAreaAccess(ROUTE_TABLE);
  for (const area of ROUTE_TABLE) {
    // Authentication covers the whole prefix, so an unknown path under it is a 401 before a 404.
    if (area.audiences) app.use(area.prefix, authenticate(ctx, area.audiences));
    if (area.errors === 'oauth') app.use(area.prefix, noStore);
    for (const mount of area.mounts) {
      app.use(
        mountPath(area, mount),
        ...(mount.tenantScoped ? tenantScope(ctx) : []),
        ...mountRouters(ctx, mount),
      );
    }
    if (area.errors === 'oauth') app.use(area.prefix, oauthNotFound);
  }
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
