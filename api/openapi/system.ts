/** OpenAPI paths of the operational endpoints: health, readiness, metrics and the documentation itself. */
import { jsonResponse, problems } from './components.ts';

const open = { security: [] };
const tags = ['system'];
const text = (description: string, media: string, example: string) => ({
  description,
  content: { [media]: { schema: { type: 'string' }, example } },
});
const Readiness = {
  type: 'object',
  required: ['status', 'checks'],
  properties: {
    status: { enum: ['ready', 'not-ready'] },
    checks: {
      type: 'object',
      description: 'database, pool, and redis when REDIS_URL is set',
      additionalProperties: { type: 'boolean' },
    },
  },
};

export const systemPaths = {
  '/healthz': {
    get: {
      ...open,
      tags,
      operationId: 'liveness',
      summary: 'Liveness: the process answers',
      responses: {
        200: jsonResponse(
          'alive',
          { type: 'object', properties: { status: { const: 'ok' } } },
          { status: 'ok' },
        ),
      },
    },
  },
  '/readyz': {
    get: {
      ...open,
      tags,
      operationId: 'readiness',
      summary: 'Readiness: database, worker pool and Redis when configured',
      responses: {
        200: jsonResponse('ready', Readiness, {
          status: 'ready',
          checks: { database: true, pool: true, redis: true },
        }),
        503: jsonResponse('a dependency is down', Readiness, {
          status: 'not-ready',
          checks: { database: true, pool: true, redis: false },
        }),
      },
    },
  },
  '/metrics': {
    get: {
      tags,
      operationId: 'metrics',
      summary: 'Prometheus metrics',
      description:
        "A bearer token of either audience holding `admin.platform.metrics.read`: the series describe every tenant's traffic. Route labels are path templates, never raw paths.",
      responses: {
        200: text(
          'the text exposition format',
          'text/plain',
          '# HELP http_requests_total HTTP requests\n# TYPE http_requests_total counter\nhttp_requests_total{method="POST",route="/api/v3/crypto/encrypt",status="200"} 1027\n',
        ),
        ...problems({
          401: 'no valid bearer token',
          403: 'the token lacks admin.platform.metrics.read',
        }),
      },
    },
  },
  '/api/v3/openapi.json': {
    get: {
      ...open,
      tags,
      operationId: 'openApiDocument',
      summary: 'This document (OpenAPI 3.1)',
      responses: {
        200: jsonResponse(
          'the document',
          { type: 'object', required: ['openapi', 'info', 'paths'] },
          { openapi: '3.1.0', info: { title: 'Keyward', version: '3.0.0' }, paths: {} },
        ),
      },
    },
  },
  '/docs': {
    get: {
      ...open,
      tags,
      operationId: 'apiReference',
      summary: 'This document rendered as a readable reference (Redoc, served from this origin)',
      responses: {
        200: text(
          'the reference page',
          'text/html',
          '<!doctype html><html lang="en">...<redoc spec-url="/api/v3/openapi.json"></redoc><script src="/docs/redoc.standalone.js"></script>...',
        ),
      },
    },
  },
  '/docs/redoc.standalone.js': {
    get: {
      ...open,
      tags,
      operationId: 'apiReferenceRenderer',
      summary: 'The renderer bundle the reference page loads, from the installed redoc package',
      responses: {
        200: text(
          'JavaScript',
          'text/javascript',
          '/*! For license information please see redoc.standalone.js.LICENSE.txt */ ...',
        ),
      },
    },
  },
};
