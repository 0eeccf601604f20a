/**
 * The OpenAPI 3.1 document, assembled from one paths module per API area so each area keeps
 * its documentation next to its routes' shape.
 */
import { systemPaths } from './system.ts';
import { authPaths } from './auth.ts';
import { adminPaths } from './admin.ts';
import { migrationPaths } from './migration.ts';
import { jobsPaths } from './jobs.ts';
import { auditPaths } from './audit.ts';
import { cryptoPaths } from './crypto.ts';
import { cryptoKeysPaths } from './crypto-keys.ts';
import { components } from './components.ts';

type PathsObject = Record<string, Record<string, unknown>>;

// One line per API area; each area module exports its paths object.
const AREAS: PathsObject[] = [
  systemPaths,
  jobsPaths,
  authPaths,
  adminPaths,
  migrationPaths,
  auditPaths,
  cryptoPaths,
  cryptoKeysPaths,
];

/** Builds the document for a deployment's public base URL. */
export function openApiDocument(baseUrl: string): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Keyward',
      version: '3.0.0',
      description: 'Multi-tenant key management and cryptography: OAuth 2.0 auth, admin, runtime crypto, PQC, audit and streaming PKCS#7/CMS to JOSE migration. Errors are RFC 7807 problem details whose `type` is `{base}/problems/<slug>`.',
    },
    servers: [{ url: baseUrl }],
    paths: Object.assign({}, ...AREAS),
    components,
    security: [{ bearer: [] }],
  };
}
