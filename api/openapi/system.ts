/** OpenAPI paths of the operational endpoints: health, readiness, metrics and the documentation itself. */
import { PROBLEMS } from '../../shared/errors/index.ts';
import { jsonResponse, problems } from './components.ts';
import { awsKmsOperation } from './aws-kms.ts';

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

const SLUGS = [...new Set(Object.values(PROBLEMS).map((p) => p.slug as string))];
const ProblemType = {
  type: 'object',
  required: ['type', 'title', 'status', 'description'],
  properties: {
    type: { type: 'string', format: 'uri', description: 'this page: the `type` of the problem' },
    title: { type: 'string' },
    status: { type: 'integer' },
    description: { type: 'string', description: 'what the problem means and what to do' },
  },
};

export const systemPaths = {
  '/': {
    get: {
      ...open,
      tags,
      operationId: 'root',
      summary: 'Redirects to the API reference (/docs)',
      responses: {
        302: {
          description: 'the reference is at /docs',
          headers: { Location: { schema: { type: 'string' }, example: '/docs' } },
          content: {
            'text/plain': { schema: { type: 'string' }, example: 'Found. Redirecting to /docs' },
          },
        },
      },
    },
    // The AWS KMS API (contract 10): POST / with X-Amz-Target, on the service's own port.
    post: awsKmsOperation,
  },
  '/problems/{slug}': {
    get: {
      ...open,
      tags,
      operationId: 'problemType',
      summary: 'The page a problem `type` URL names: what the problem means and what to do',
      description:
        'One page per problem of the catalogue, HTML by default and JSON for `Accept: application/json`.',
      parameters: [
        {
          name: 'slug',
          in: 'path',
          required: true,
          schema: { enum: SLUGS },
          example: 'key-suspended',
        },
      ],
      responses: {
        200: {
          description: 'the page',
          content: {
            'text/html': {
              schema: { type: 'string' },
              example:
                '<!doctype html><html lang="en">...<h1>Key Suspended</h1><p>HTTP status 409. ...</p>...',
            },
            'application/json': {
              schema: ProblemType,
              example: {
                type: 'http://127.0.0.1:8080/problems/key-suspended',
                title: 'Key Suspended',
                status: 409,
                description: PROBLEMS.key_suspended.help,
              },
            },
          },
        },
        ...problems({ 404: 'no problem type has this name' }),
      },
    },
  },
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
          '# HELP keyward_http_requests_total HTTP requests by method, route template and status\n# TYPE keyward_http_requests_total counter\nkeyward_http_requests_total{method="POST",route="/api/v3/crypto/encrypt",status="200"} 1027\n',
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
  '/console': {
    get: {
      ...open,
      tags,
      operationId: 'console',
      summary:
        'The web console for the people who run Keyward (static page; it signs in with the password grant)',
      responses: {
        200: text(
          'the console page, under a Content-Security-Policy without inline code or other origins',
          'text/html',
          '<!doctype html><html lang="en">...<script type="module" src="/console/js/main.js"></script>...',
        ),
      },
    },
  },
  '/console/{path}': {
    get: {
      ...open,
      tags,
      operationId: 'consoleFile',
      summary:
        "A file of the console (its ES modules and stylesheet, from the checkout's console/ folder)",
      parameters: [
        {
          name: 'path',
          in: 'path',
          required: true,
          schema: { type: 'string' },
          example: 'js/main.js',
        },
      ],
      responses: {
        200: text('the file', 'text/javascript', 'export function start() { ... }'),
        ...problems({ 404: 'no such file in the console' }),
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
