/**
 * OpenAPI paths of the queued migration (contract 6): uploads into the tenant's object storage
 * and conversion jobs on the BullMQ queue. Both audiences are accepted; the permission decides.
 * Without REDIS_URL every /jobs path answers 503 queue-unavailable (contract 1).
 */
import { problemResponse, type Schema } from './components.ts';

const str = { type: 'string' };
const int = { type: 'integer', minimum: 0 };
const time = { type: 'string', format: 'date-time' };
const nullable = (s: Schema): Schema => ({ oneOf: [s, { type: 'null' }] });
const obj = (properties: Schema, required: string[] = Object.keys(properties)): Schema => ({
  type: 'object',
  required,
  properties,
});

const JobId = {
  type: 'string',
  pattern: '^(cv|bt)-[0-9a-f]{40}$',
  description:
    '`cv-` a conversion, `bt-` a batch; derived from tenant, source, source version, metadata and output, so a resubmission gets the same id',
};
const State = {
  enum: ['queued', 'active', 'retrying', 'cancelling', 'completed', 'failed', 'cancelled'],
  description:
    '`retrying`: waiting for its backoff after a transient fault (storage or Redis); a batch is `completed` when every child finished and at least one converted',
};
const Progress = obj({
  bytesRead: int,
  bytesWritten: int,
  objectsDone: int,
  objectsFailed: int,
  objectsTotal: int,
});
/** A job's problem has the shape of every other problem (RFC 7807), its details as extra members. */
const JobProblem = { $ref: '#/components/schemas/Problem' };
const Convert = obj(
  {
    id: JobId,
    type: { const: 'convert' },
    state: State,
    source: obj({
      key: str,
      version: {
        type: 'string',
        description:
          'etag, or size and mtime, of the object when submitted; a changed source fails the job with source-changed',
      },
    }),
    output: obj({ key: nullable(str) }),
    progress: Progress,
    attempts: obj({ made: int, max: int }),
    result: nullable(
      obj({
        key: {
          type: 'string',
          description:
            'output prefix + source name + `.jws.json` (SignedData) or `.jwe` (multipart JWE)',
        },
        size: int,
        contentType: str,
        objects: {
          type: 'array',
          description:
            'every object the conversion wrote, the result first: for a SignedData also its signed content (`role: content`, key `<output>.content`), so nothing of the input is lost',
          items: obj({
            role: { enum: ['result', 'content'] },
            key: str,
            size: int,
            contentType: str,
          }),
        },
      }),
    ),
    problem: nullable(JobProblem),
    lastProblem: {
      allOf: [JobProblem],
      description: 'the fault of the previous attempt, while the job is retrying',
    },
    createdAt: time,
    startedAt: nullable(time),
    finishedAt: nullable(time),
  },
  [
    'id',
    'type',
    'state',
    'source',
    'output',
    'progress',
    'attempts',
    'result',
    'problem',
    'createdAt',
    'startedAt',
    'finishedAt',
  ],
);
const Batch = obj({
  id: JobId,
  type: { const: 'batch' },
  state: State,
  source: obj({ bucket: str, prefix: str }, ['prefix']),
  output: obj({ prefix: str }),
  progress: Progress,
  failures: {
    type: 'array',
    description: 'the first 50 failed children; GET .../children lists all',
    items: obj({ id: JobId, source: obj({ key: str }), problem: JobProblem }),
  },
  createdAt: time,
  finishedAt: nullable(time),
  cancelledAt: nullable(time),
});
const Submit = obj(
  {
    source: {
      oneOf: [
        obj({ key: { type: 'string', description: 'one object of your storage area' } }),
        obj(
          {
            bucket: {
              type: 'string',
              description: 'optional; must be the service bucket (S3_BUCKET)',
            },
            prefix: {
              type: 'string',
              description:
                'every object under it becomes a child job (results under output.prefix are left out)',
            },
          },
          ['prefix'],
        ),
      ],
    },
    metadata: {
      type: 'object',
      description:
        'conversion metadata of contract 5 (signerKid, recipientKid, targetKid: one kid or a list of up to 16, contentEncryption, keyManagement, b64) and contract 10 (verify: signature or chain); default {}. password is refused (400 validation-failed): a job stores its metadata',
    },
    output: obj({
      prefix: {
        type: 'string',
        description: "where results go; a batch keeps the paths below the source prefix's folder",
      },
    }),
  },
  ['source', 'output'],
);

const json = (description: string, schema: Schema, example?: unknown) => ({
  description,
  content: { 'application/json': { schema, ...(example === undefined ? {} : { example }) } },
});

const JOB_ID = 'cv-3b5e1f0c9a7d2e4b6c8a0f1e3d5b7c9a1e2f4d6b';
const SOURCE_KEY = 'invoices/2026/11/inv-0001.p7m';
const CONVERT_EXAMPLE = {
  id: JOB_ID,
  type: 'convert',
  state: 'completed',
  source: { key: SOURCE_KEY, version: '"9b2cf535f27731c974343645a3985328"' },
  output: { key: 'converted/inv-0001.p7m.jwe' },
  progress: {
    bytesRead: 1048576,
    bytesWritten: 1049012,
    objectsDone: 1,
    objectsFailed: 0,
    objectsTotal: 1,
  },
  attempts: { made: 1, max: 3 },
  result: {
    key: 'converted/inv-0001.p7m.jwe',
    size: 1049012,
    contentType: 'multipart/mixed; boundary=keyward-jwe',
    objects: [
      {
        role: 'result',
        key: 'converted/inv-0001.p7m.jwe',
        size: 1049012,
        contentType: 'multipart/mixed; boundary=keyward-jwe',
      },
    ],
  },
  problem: null,
  createdAt: '2026-11-23T16:00:00.000Z',
  startedAt: '2026-11-23T16:00:00.120Z',
  finishedAt: '2026-11-23T16:00:01.480Z',
};
const common = {
  401: problemResponse('missing or invalid bearer token'),
  403: problemResponse('the role lacks the permission'),
  429: problemResponse('rate limit reached (Retry-After)'),
};
const queue = {
  503: problemResponse(
    'queue-unavailable: REDIS_URL is not set or Redis is unreachable; storage-unavailable: object storage is unreachable',
  ),
};
const CANCELLED_EXAMPLE = {
  ...CONVERT_EXAMPLE,
  state: 'cancelling',
  output: { key: null },
  result: null,
  finishedAt: null,
};
const ID = [{ name: 'id', in: 'path', required: true, schema: JobId, example: JOB_ID }];
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
  '/api/v3/migration/jobs': {
    post: {
      tags,
      operationId: 'submitJob',
      summary: 'Submit a conversion, or a batch over a prefix',
      'x-keyward-decrypts': true,
      description: perm(
        'migration.jobs.create',
        "The job decrypts as its submitter may: a submitter without crypto.decrypt gets a job of its own whose encrypted inputs fail with 403 forbidden, and failed decryptions count against the submitter's decryption-failure budget (contract 10). Idempotent: the same tenant, source, source version, metadata and output give the same job; resubmitting a failed or cancelled job runs it again under its id. Transient faults retry with exponential backoff (JOB_ATTEMPTS, JOB_BACKOFF_MS); bad input fails at once with its problem.",
      ),
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: Submit,
            example: {
              source: { key: SOURCE_KEY },
              metadata: { targetKid: 'archive-2026' },
              output: { prefix: 'converted/' },
            },
          },
        },
      },
      responses: {
        202: {
          ...json(
            'accepted; `Location` names the job',
            { oneOf: [Convert, Batch] },
            {
              ...CONVERT_EXAMPLE,
              state: 'queued',
              output: { key: null },
              progress: {
                bytesRead: 0,
                bytesWritten: 0,
                objectsDone: 0,
                objectsFailed: 0,
                objectsTotal: 1,
              },
              attempts: { made: 0, max: 3 },
              result: null,
              startedAt: null,
              finishedAt: null,
            },
          ),
          headers: { Location: { schema: str } },
        },
        400: problemResponse('validation-failed (the field is named)'),
        404: problemResponse('source.key does not exist in your storage'),
        422: problemResponse('no objects under the prefix, or more than JOB_MAX_BATCH_OBJECTS'),
        ...common,
        ...queue,
      },
    },
  },
  '/api/v3/migration/jobs/{id}': {
    get: {
      tags,
      operationId: 'getJob',
      summary: 'Read a job or batch',
      description: perm(
        'migration.jobs.read',
        "State, progress in bytes and objects, the result object or the problem that failed it. Another tenant's job answers 404.",
      ),
      parameters: ID,
      responses: {
        200: json('the job', { oneOf: [Convert, Batch] }, CONVERT_EXAMPLE),
        404: problemResponse('no such job in this tenant'),
        ...common,
        ...queue,
      },
    },
    delete: {
      tags,
      operationId: 'deleteJob',
      summary: 'Cancel a job or batch (same as POST .../cancel)',
      description: perm('migration.jobs.cancel', 'See POST .../cancel.'),
      parameters: ID,
      responses: {
        202: json('cancelled or cancelling', { oneOf: [Convert, Batch] }, CANCELLED_EXAMPLE),
        404: problemResponse('no such job'),
        409: problemResponse('job-not-finished: already completed or failed'),
        ...common,
        ...queue,
      },
    },
  },
  '/api/v3/migration/jobs/{id}/cancel': {
    post: {
      tags,
      operationId: 'cancelJob',
      summary: 'Cancel a job or batch',
      description: perm(
        'migration.jobs.cancel',
        'A queued job is removed; a running one is stopped by its worker and its partial output discarded (`cancelling` until then). For a batch, every unfinished child is cancelled. Resubmitting runs it again.',
      ),
      parameters: ID,
      responses: {
        202: json('cancelled or cancelling', { oneOf: [Convert, Batch] }, CANCELLED_EXAMPLE),
        404: problemResponse('no such job'),
        409: problemResponse('job-not-finished: already completed or failed'),
        ...common,
        ...queue,
      },
    },
  },
  '/api/v3/migration/jobs/{id}/children': {
    get: {
      tags,
      operationId: 'listJobChildren',
      summary: 'List the child jobs of a batch',
      description: perm(
        'migration.jobs.read',
        'Each child is a conversion job with its own id, result and problem.',
      ),
      parameters: [
        ...ID,
        {
          name: 'limit',
          in: 'query',
          schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 },
        },
        { name: 'cursor', in: 'query', schema: str },
      ],
      responses: {
        200: json(
          'a page',
          obj({ items: { type: 'array', items: Convert }, nextCursor: nullable(str) }),
          {
            items: [{ ...CONVERT_EXAMPLE, id: 'cv-8d0a2c4e6f8b1d3f5a7c9e1b3d5f7a9c2e4f6a8b' }],
            nextCursor: null,
          },
        ),
        404: problemResponse('no such batch'),
        ...common,
        ...queue,
      },
    },
  },
  '/api/v3/migration/jobs/{id}/result': {
    delete: {
      tags,
      operationId: 'deleteJobResults',
      summary: 'Delete the objects a finished conversion (or every child of a batch) wrote',
      description: perm(
        'migration.jobs.cancel',
        "Removes every object in result.objects (the JOSE result and, for a SignedData, its content) from the tenant's storage, audited as migration.job.results.delete. The job record stays readable; its result download answers 404 afterwards.",
      ),
      parameters: ID,
      responses: {
        200: json('deleted', obj({ id: str, deleted: { type: 'array', items: str } }), {
          id: 'cv-4f0c…',
          deleted: ['converted/inv-0001.p7m.jws.json', 'converted/inv-0001.p7m.content'],
        }),
        404: problemResponse('no such job'),
        409: problemResponse('job-not-finished'),
        ...common,
        ...queue,
      },
    },
    get: {
      tags,
      operationId: 'getJobResult',
      summary: 'Download the result of a completed conversion',
      description: perm(
        'migration.jobs.result.read',
        'Streams the result object with the content type of contract 5 (`application/octet-stream` JWS object, or `multipart/mixed` JWE); `?object=content` streams the signed content a SignedData conversion stored beside its JWS.',
      ),
      parameters: [
        ...ID,
        {
          name: 'object',
          in: 'query',
          required: false,
          schema: { enum: ['result', 'content'], default: 'result' },
          description: 'which object the job wrote (result.objects[].role)',
        },
      ],
      responses: {
        200: {
          description: 'the result',
          content: {
            'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
            'multipart/mixed': { schema: { type: 'string', format: 'binary' } },
          },
        },
        404: problemResponse('no such job, or the result object was deleted'),
        409: problemResponse('job-not-finished, or a batch (its children have results)'),
        ...common,
        ...queue,
      },
    },
  },
};
