/** A conversion job and a batch as the jobs API takes and answers them. */
import Type, { type Static } from 'typebox';
import { Body, Nullable, ProblemDocument, Time } from './common.ts';

export const JOB_ID = 'cv-3b5e1f0c9a7d2e4b6c8a0f1e3d5b7c9a1e2f4d6b';
export const SOURCE_KEY = 'invoices/2026/11/inv-0001.p7m';
export const JobId = Type.String({
  pattern: '^(cv|bt)-[0-9a-f]{40}$',
  description:
    '`cv-` a conversion, `bt-` a batch; derived from tenant, source, source version, metadata and output, so a resubmission gets the same id',
});
export const State = Type.Union(
  [
    Type.Literal('queued'),
    Type.Literal('active'),
    Type.Literal('retrying'),
    Type.Literal('cancelling'),
    Type.Literal('completed'),
    Type.Literal('failed'),
    Type.Literal('cancelled'),
  ],
  {
    description:
      '`retrying`: waiting for its backoff after a transient fault (storage or Redis); a batch is `completed` when every child finished and at least one converted',
  },
);
export const Count = Type.Integer({ minimum: 0 });
export const Progress = Type.Object({
  bytesRead: Count,
  bytesWritten: Count,
  objectsDone: Count,
  objectsFailed: Count,
  objectsTotal: Count,
});
/** A job's problem has the shape of every other problem (RFC 7807). */
const JobProblem = ProblemDocument;
export const CONVERT_EXAMPLE = {
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
export const Convert = Type.Object({
  id: JobId,
  type: Type.Literal('convert'),
  state: State,
  source: Type.Object({
    key: Type.String(),
    version: Type.String({
      description:
        'etag, or size and mtime, of the object when submitted; a changed source fails the job with source-changed',
    }),
  }),
  output: Type.Object({ key: Nullable(Type.String()) }),
  progress: Progress,
  attempts: Type.Object({ made: Count, max: Count }),
  result: Nullable(
    Type.Object({
      key: Type.String({
        description:
          'output prefix + source name + `.jws.json` (SignedData) or `.jwe` (multipart JWE)',
      }),
      size: Count,
      contentType: Type.String(),
      objects: Type.Array(
        Type.Object({
          role: Type.Union([Type.Literal('result'), Type.Literal('content')]),
          key: Type.String(),
          size: Count,
          contentType: Type.String(),
        }),
        {
          description:
            'every object the conversion wrote, the result first: for a SignedData also its signed content (`role: content`, key `<output>.content`), so nothing of the input is lost',
        },
      ),
    }),
  ),
  problem: Nullable(JobProblem),
  lastProblem: Type.Optional(
    Type.Object(
      {},
      { description: 'the fault of the previous attempt, while the job is retrying' },
    ),
  ),
  createdAt: Time(),
  startedAt: Nullable(Time()),
  finishedAt: Nullable(Time()),
});
export const Batch = Type.Object({
  id: JobId,
  type: Type.Literal('batch'),
  state: State,
  source: Type.Object({ bucket: Type.Optional(Type.String()), prefix: Type.String() }),
  output: Type.Object({ prefix: Type.String() }),
  progress: Progress,
  failures: Type.Array(
    Type.Object({ id: JobId, source: Type.Object({ key: Type.String() }), problem: JobProblem }),
    { description: 'the first 50 failed children; GET .../children lists all' },
  ),
  createdAt: Time(),
  finishedAt: Nullable(Time()),
  cancelledAt: Nullable(Time()),
});

export type ProgressView = Static<typeof Progress>;
export type ConvertView = Static<typeof Convert>;
export type BatchView = Static<typeof Batch>;

/** POST /api/v3/migration/jobs: one object or every object under a prefix. */
export const Submit = Body(
  {
    source: Type.Union([
      Type.Object(
        { key: Type.String({ description: 'one object of your storage area' }) },
        { additionalProperties: false },
      ),
      Type.Object(
        {
          bucket: Type.Optional(
            Type.String({ description: 'optional; must be the service bucket (S3_BUCKET)' }),
          ),
          prefix: Type.String({
            description:
              'every object under it becomes a child job (results under output.prefix are left out)',
          }),
        },
        { additionalProperties: false },
      ),
    ]),
    metadata: Type.Optional(
      Type.Object(
        {},
        {
          description:
            'conversion metadata (signerKid, recipientKid, targetKid: one kid or a list of up to 16, contentEncryption, keyManagement, b64, verify: signature or chain); default {}. password is refused (400 validation-failed): a job stores its metadata',
        },
      ),
    ),
    output: Type.Object(
      {
        prefix: Type.String({
          description: "where results go; a batch keeps the paths below the source prefix's folder",
        }),
      },
      { additionalProperties: false },
    ),
  },
  {
    source: { key: SOURCE_KEY },
    metadata: { targetKid: 'archive-2026' },
    output: { prefix: 'converted/' },
  },
);

export type SubmitBody = Static<typeof Submit>;
