/**
 * The unversioned migration aliases as route rows, mounted at /api/migration (both the admin and
 * the core audience, as for /api/v3/migration; the permission decides):
 * - `POST /api/migration/pkcs12`: the same multipart form and answer as
 *   `POST /api/v3/admin/tenants/{tenantId}/keys/import-keystore`, importing into the token's
 *   tenant (older clients have no tenant in the path);
 * - `POST /api/migration/stream/analyze-pkcs7`: the analyze row of
 *   /api/v3/migration/stream.
 *
 * Tests: test/integration/admin/keystore-import.test.ts,
 *   test/integration/core/expensive-routes.test.ts, test/integration/http/readers.test.ts,
 *   test/integration/keys/rsa-exponents.test.ts
 */
import { endpoint } from '../../rows/endpoint.ts';
import {
  IMPORT_PROBLEMS,
  ImportedKeys,
  KEYSTORE_FORM,
  importedKeyEvents,
  importIntoTokenTenant,
} from '../shared/keystore-import.ts';
import { analyzeEndpoint } from '../shared/pkcs7-analyze.ts';

/** The rows mounted at /api/migration (the analyze alias at /api/migration/stream). */
export const LEGACY_MIGRATION_ENDPOINTS = [
  endpoint({
    method: 'post',
    path: '/pkcs12',
    operationId: 'legacyImportKeystore',
    tag: 'migration',
    summary: "Unversioned keystore import into the token's tenant (alias of keys/import-keystore)",
    description: 'Accepts service-admin and service-core tokens.',
    // Either imports: migration.keystore.import (migration tooling) or admin.keys.import.
    access: { anyOf: ['migration.keystore.import', 'admin.keys.import'] },
    request: KEYSTORE_FORM,
    answer: { status: 201, description: 'the imported keys', schema: ImportedKeys },
    problems: IMPORT_PROBLEMS,
    audit: { action: 'key.import', each: (_input, keys) => importedKeyEvents(keys) },
    expensive: { kinds: ['keystore-derivation'] },
    handle: importIntoTokenTenant,
  }),
];

/** The analyze alias, mounted at /api/migration/stream. */
export const LEGACY_STREAM_ENDPOINTS = [
  analyzeEndpoint('legacyAnalyzePkcs7', 'Analyze a PKCS#7/CMS file (unversioned alias)'),
];
