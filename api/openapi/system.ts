/** OpenAPI paths of the operational endpoints. */
import { problemResponse } from './components.ts';

const open = { security: [] };

export const systemPaths = {
  '/healthz': { get: { ...open, summary: 'Liveness', tags: ['system'], responses: { 200: { description: 'alive' } } } },
  '/readyz': {
    get: { ...open, summary: 'Readiness: database, worker pool and Redis when configured', tags: ['system'], responses: { 200: { description: 'ready' }, 503: { description: 'a dependency is down' } } },
  },
  '/metrics': {
    get: {
      security: [{ bearer: [] }], summary: 'Prometheus metrics (bearer with admin.platform.metrics.read; route labels are templates)', tags: ['system'],
      responses: { 200: { description: 'text exposition format' }, 401: problemResponse('no valid bearer token'), 403: problemResponse('the token lacks admin.platform.metrics.read') },
    },
  },
  '/api/v3/openapi.json': { get: { ...open, summary: 'This document', tags: ['system'], responses: { 200: { description: 'OpenAPI 3.1' } } } },
  '/docs': { get: { ...open, summary: 'Rendered API documentation', tags: ['system'], responses: { 200: { description: 'HTML' }, 404: problemResponse('not found') } } },
};
