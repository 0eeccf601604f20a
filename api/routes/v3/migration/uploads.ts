/**
 * PUT /api/v3/migration/uploads/{name}: streams an input into the tenant's object
 * storage, for a job to read later; POST /api/v3/migration/uploads streams many in one
 * multipart/form-data request; DELETE removes one (audited). Route rows; the tenant always
 * comes from the token.
 *
 * Tests: test/integration/jobs/lifecycle.test.ts, test/integration/http/readers.test.ts,
 *   test/integration/http/unread-bodies.test.ts, test/integration/jobs/api.test.ts,
 *   test/e2e/console-batch.test.ts, test/e2e/console.test.ts, and 13 more under test/integration/
 */
import Type from 'typebox';
import { sourceVersionOf } from '../../../../shared/queues/index.ts';
import { tenantStore } from '../../../../shared/storage/index.ts';
import { endpoint } from '../../../rows/endpoint.ts';
import { deleteUpload } from '../../../services/jobs/tenant-jobs.ts';
import { rawBody } from '../../../http/streaming.ts';
import { streamedOperation } from '../../../rows/streamed-operation.ts';
import { streamMultipart } from '../../../http/streaming-multipart.ts';
import { UPLOADS_PER_REQUEST, storeFormFiles } from '../../../services/migration/uploads.ts';
import { problem } from '../../../../shared/errors/index.ts';

const SOURCE_KEY = 'invoices/2026/11/inv-0001.p7m';
const TAG = 'migration jobs';
const STORAGE_PROBLEMS = { 400: 'invalid key', 503: 'storage-unavailable' };

/** The object key: a wildcard path parameter (`/` allowed), checked by the store. */
const ObjectName = (description: string) =>
  Type.Object({ name: Type.String({ description, examples: [SOURCE_KEY] }) });

const Stored = Type.Object(
  { key: Type.String(), size: Type.Integer({ minimum: 0 }), version: Type.String() },
  {
    examples: [{ key: SOURCE_KEY, size: 1048576, version: '"9b2cf535f27731c974343645a3985328"' }],
  },
);

const upload = endpoint({
  method: 'put',
  path: '/*name',
  operationId: 'uploadObject',
  tag: TAG,
  summary: 'Stream a file into your object storage',
  description:
    'The request body is the file, of any size, streamed into storage (multipart upload on S3); the object becomes visible only once complete. `name` may contain `/` and is the object key to use as `source.key`.',
  access: { anyOf: ['migration.uploads.write'] },
  budget: 'migration.uploads.write',
  params: ObjectName(
    "object key; no `..`, empty segments, backslashes or control characters; at most 1024 bytes; not below `.keyward/`, where Keyward keeps its own objects (a migration's stored manifest)",
  ),
  request: { media: { 'application/octet-stream': {} } },
  answer: { status: 201, description: 'stored', media: 'application/json', schema: Stored },
  problems: STORAGE_PROBLEMS,
  handle: (ctx, input) =>
    streamedOperation(ctx, input, 'migration.upload', async (op) => {
      const { req, res } = input;
      const objects = tenantStore(await ctx.objectStore.get(), input.claims.tenantId);
      // The request itself is the body: streamed into storage, visible only once complete. It
      // goes in as an iterator that leaves the socket alone when the store gives up (a store
      // destroys a Readable body on failure, which dropped the connection before the refusal
      // was written).
      const info = await objects.put(input.params.name, op.countIn(rawBody(req)), {
        contentType: req.headers['content-type'],
      });
      op.target = info.key.slice(0, 512);
      op.details = { size: info.size };
      const body = JSON.stringify({
        key: info.key,
        size: info.size,
        version: sourceVersionOf((await objects.head(info.key)) ?? info),
      });
      res.status(201).type('application/json').send(body);
      op.bytesOut = body.length;
    }),
});

const uploadMany = endpoint({
  method: 'post',
  path: '/',
  operationId: 'uploadObjects',
  tag: TAG,
  summary: 'Stream many files into your object storage in one request',
  description: `A multipart/form-data body of pairs, in order: a \`key\` field (the object key, as PUT .../uploads/{name} takes it) then a \`file\` part with a filename (its bytes, of any size, streamed into storage with the part's Content-Type; a part without a filename is a form field, at most 64 KiB). Up to ${UPLOADS_PER_REQUEST.toLocaleString('en')} files; the answer lists them in request order. A file of at most 1 MiB is read whole and stored while the next parts are read (up to 8 at once), a larger one streams into storage once those before it are stored; the same key twice is stored in request order, so the later file wins. A failure answers a problem (the earliest in request order) once every store already begun has ended, and stores nothing of the file it happened in; the files before it stay stored, and small files after it may have been stored too (send the request again: a put replaces an object whole). A folder of small files is uploaded this way in a request per thousand files rather than one per file. Audited once, as migration.upload, with the number of files and the first and last key.`,
  access: { anyOf: ['migration.uploads.write'] },
  budget: 'migration.uploads.write',
  request: {
    media: {
      'multipart/form-data': {
        schema: Type.Object({
          key: Type.String({ description: 'the object key of the file part after it' }),
          file: Type.String({ format: 'binary', description: 'the bytes' }),
        }),
      },
    },
  },
  answer: {
    status: 201,
    description: 'every file stored, in request order',
    media: 'application/json',
    schema: Type.Object(
      {
        objects: Type.Array(
          Type.Object({ key: Type.String(), size: Type.Integer({ minimum: 0 }) }),
        ),
      },
      { examples: [{ objects: [{ key: SOURCE_KEY, size: 31024 }] }] },
    ),
  },
  problems: {
    ...STORAGE_PROBLEMS,
    400: 'an invalid key; validation-failed: not key/file pairs, no file, or more files than the limit',
    413: 'a key field longer than 4096 bytes',
  },
  handle: (ctx, input) =>
    streamedOperation(ctx, input, 'migration.upload', async (op) => {
      const { req, res } = input;
      const objects = tenantStore(await ctx.objectStore.get(), input.claims.tenantId);
      const form = (op.form = streamMultipart(req, { maxParts: 2 * UPLOADS_PER_REQUEST }));
      const stored = await storeFormFiles(form, objects, op.countIn, (file, files) => {
        // Kept current, so a request that fails midway is audited with what it stored.
        op.target ??= file.key.slice(0, 512);
        op.details = { files, lastKey: file.key.slice(0, 512) };
      });
      if (stored.length === 0) throw problem('validation_failed', 'the form holds no file');
      const body = JSON.stringify({ objects: stored });
      res.status(201).type('application/json').send(body);
      op.bytesOut = body.length;
    }),
});

const remove = endpoint({
  method: 'delete',
  path: '/*name',
  operationId: 'deleteUpload',
  tag: TAG,
  summary: 'Delete an uploaded file from your object storage',
  description:
    "Removes the object from the tenant's storage (audited as migration.upload.delete). Objects also go after MIGRATION_OBJECT_RETENTION seconds when the operator set it.",
  access: { anyOf: ['migration.uploads.write'] },
  budget: 'migration.uploads.write',
  params: ObjectName('object key, as given to PUT'),
  answer: { status: 204, description: 'deleted' },
  problems: { ...STORAGE_PROBLEMS, 404: 'no such object in this tenant' },
  handle: (ctx, { params, claims }) => deleteUpload(ctx, claims.tenantId, params.name),
  audit: {
    action: 'migration.upload.delete',
    target: (_, r) => r.key.slice(0, 512),
    details: (_, r) => ({ size: r.size }),
  },
});

/** The rows mounted at /api/v3/migration/uploads. */
export const UPLOAD_ENDPOINTS = [uploadMany, upload, remove];
