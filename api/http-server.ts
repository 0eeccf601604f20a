/**
 * The API's node:http server, shared by the process start (api/start.ts), the tests and the benches:
 * the request listener (runtime lane, then Express) behind the connection limits
 * (api/http/connection-limits.ts),
 * which thus hold on both stacks. Node's requestTimeout stays off, because conversions and
 * uploads of any size stream for as long as they take; stalled bodies are cut by the body
 * deadlines instead (idle on every route, overall on the small-body ones), stalled headers by
 * headersTimeout, and floods of connections by the caps.
 */
import { createServer, type Server } from 'node:http';
import type { AppContext } from './context.ts';
import { createRequestListener } from './app.ts';
import { BodyDeadlines } from './http/body-deadline.ts';
import { hasBody } from './http/json-body.ts';
import { ConnectionLimits } from './http/connection-limits.ts';
import { answersInOAuthShape } from './routes/index.ts';

/** Builds the server over a context; the caller listens. */
export function createHttpServer(ctx: AppContext): Server {
  const { config } = ctx;
  const listener = createRequestListener(ctx);
  const deadlines = new BodyDeadlines({
    idleMs: config.bodyIdleTimeoutMs,
    overallMs: config.smallBodyTimeoutMs,
  });
  const limits = new ConnectionLimits(
    {
      perAddress: config.maxConnectionsPerAddress,
      total: config.maxConnections,
      reserve: config.connectionReserve,
      publicBaseUrl: config.publicBaseUrl,
      oauthShaped: answersInOAuthShape,
    },
    ctx.logger,
    ctx.metrics,
  );
  const server = createServer(
    {
      requestTimeout: 0,
      headersTimeout: config.headersTimeoutMs,
      // Node checks headersTimeout only this often (30 s by default): a quarter of it keeps the
      // overshoot small.
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, config.headersTimeoutMs / 4)),
    },
    (req, res) => {
      if (limits.refused(req, res)) return;
      if (hasBody(req)) deadlines.watch(req, res);
      listener(req, res);
    },
  );
  server.keepAliveTimeout = 65_000;
  limits.attach(server);
  server.on('listening', () => deadlines.start()).on('close', () => deadlines.stop());
  return server;
}
