/**
 * OpenAPI path of the PQC API's key list, still written by hand; the PQC operations are
 * generated from their rows (api/routes/v3/pqc.ts).
 */
import { PAGE_PARAMETERS, jsonResponse, pageOf, plainSchema, problems } from './components.ts';
import { COMMON } from './crypto.ts';
import { KeyView as KeyViewSchema } from '../http/key-schemas.ts';

/** The key view the Core key list answers (its row's schema). */
const KeyView = plainSchema(KeyViewSchema);

const PQC_KEY = {
  ...KeyView,
  examples: [
    {
      ...(KeyView.examples as Array<Record<string, unknown>>)[0],
      kid: 'pq-exchange',
      type: 'ml-kem-768',
      currentVersion: 1,
    },
  ],
};
export const pqcPaths = {
  '/api/v3/pqc/keys': {
    get: {
      tags: ['pqc'],
      operationId: 'listPqcKeys',
      summary: "The tenant's usable post-quantum keys (ML-KEM, ML-DSA, SLH-DSA, X-Wing)",
      description:
        'Requires `pqc.keys.read`. Active and suspended keys, by kid; metadata and the current public JWK (AKP) only.',
      parameters: PAGE_PARAMETERS,
      responses: {
        200: jsonResponse('a page of keys', pageOf(PQC_KEY)),
        ...problems({
          400: 'validation-failed: a bad limit or cursor',
          401: COMMON[401],
          403: COMMON[403],
          429: COMMON[429],
        }),
      },
    },
  },
};
