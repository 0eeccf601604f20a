/**
 * OpenAPI paths of the uploads into the tenant's object storage (contract 6), still written by
 * hand: the upload's path is a wildcard and its body a stream. The jobs are route rows
 * (api/routes/v3/migration/jobs.ts). Both audiences are accepted; the permission decides.
 */
import { problemResponse, type Schema } from './components.ts';

const str = { type: 'string' };
const int = { type: 'integer', minimum: 0 };
const obj = (properties: Schema, required: string[] = Object.keys(properties)): Schema => ({
  type: 'object',
  required,
  properties,
});

const json = (description: string, schema: Schema, example?: unknown) => ({
  description,
  content: { 'application/json': { schema, ...(example === undefined ? {} : { example }) } },
});

const SOURCE_KEY = 'invoices/2026/11/inv-0001.p7m';
const common = {
  401: problemResponse('missing or invalid bearer token'),
  403: problemResponse('the role lacks the permission'),
  429: problemResponse('rate limit reached (Retry-After)'),
};
const tags = ['migration jobs'];
const perm = (p: string, text: string) => `${text}\n\nPermission: \`${p}\`.`;

export const jobsPaths = {
  '/api/v3/migration/uploads/{name}': {
    put: {
      tags,
      operationId: 'uploadObject',
      summary: 'Stream a file into your object storage',
      description: perm(
        'migration.uploads.write',
        'The request body is the file, of any size, streamed into storage (multipart upload on S3); the object becomes visible only once complete. `name` may contain `/` and is the object key to use as `source.key`.',
      ),
      parameters: [
        {
          name: 'name',
          in: 'path',
          required: true,
          schema: str,
          description:
            'object key; no `..`, empty segments, backslashes or control characters; at most 1024 bytes',
          example: SOURCE_KEY,
        },
      ],
      requestBody: {
        required: true,
        content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
      },
      responses: {
        201: json('stored', obj({ key: str, size: int, version: str }), {
          key: SOURCE_KEY,
          size: 1048576,
          version: '"9b2cf535f27731c974343645a3985328"',
        }),
        400: problemResponse('invalid key'),
        ...common,
        503: problemResponse('storage-unavailable'),
      },
    },
    delete: {
      tags,
      operationId: 'deleteUpload',
      summary: 'Delete an uploaded file from your object storage',
      description: perm(
        'migration.uploads.write',
        "Removes the object from the tenant's storage (audited as migration.upload.delete). Objects also go after MIGRATION_OBJECT_RETENTION seconds when the operator set it.",
      ),
      parameters: [
        {
          name: 'name',
          in: 'path',
          required: true,
          schema: str,
          description: 'object key, as given to PUT',
          example: SOURCE_KEY,
        },
      ],
      responses: {
        204: { description: 'deleted' },
        400: problemResponse('invalid key'),
        404: problemResponse('no such object in this tenant'),
        ...common,
        503: problemResponse('storage-unavailable'),
      },
    },
  },
};
