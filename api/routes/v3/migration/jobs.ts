/**
 * The queued side of migration, /api/v3/migration/jobs: submits, reads, lists the
 * children of a batch, streams a result and cancels (uploads are in ./uploads.ts). The tenant
 * always comes from the token; another tenant's job answers 404, exactly like a missing one.
 * Without REDIS_URL every path answers 503 queue-unavailable.
 *
 * Tests: test/integration/jobs/lifecycle.test.ts, test/integration/jobs/archive-forms.test.ts,
 *   test/integration/jobs/batch.test.ts, test/integration/jobs/api.test.ts,
 *   test/integration/jobs/embedded-worker.test.ts, test/integration/jobs/several-recipients.test.ts,
 *   and 10 more under test/e2e/, test/integration/
 */
import { pipeline } from 'node:stream/promises';
import Type from 'typebox';
import { endpoint } from '../../../rows/endpoint.ts';
import { pageRequest } from '../../../rows/pagination.ts';
import { PAGE_QUERY, Nullable } from '../../../schemas/common.ts';
import {
  cancelJob,
  deleteJobResults,
  jobChildren,
  openJobResult,
  readJob,
  submitJob,
} from '../../../services/jobs/tenant-jobs.ts';
import { JOB_ID, JobId, CONVERT_EXAMPLE, Convert, Batch, Submit } from '../../../schemas/jobs.ts';

const JOBS = '/api/v3/migration/jobs';
const tag = 'migration jobs';

const Job = (example: unknown) => Type.Union([Convert, Batch], { examples: [example] });
const CANCELLED_EXAMPLE = {
  ...CONVERT_EXAMPLE,
  state: 'cancelling',
  output: { key: null },
  result: null,
  finishedAt: null,
};
const QUEUED_EXAMPLE = {
  ...CONVERT_EXAMPLE,
  state: 'queued',
  output: { key: null },
  progress: { bytesRead: 0, bytesWritten: 0, objectsDone: 0, objectsFailed: 0, objectsTotal: 1 },
  attempts: { made: 0, max: 3 },
  result: null,
  startedAt: null,
  finishedAt: null,
};

const JobPath = Type.Object({ id: { ...JobId, examples: [JOB_ID] } });
const QUEUE = {
  503: 'queue-unavailable: REDIS_URL is not set or Redis is unreachable; storage-unavailable: object storage is unreachable',
};

/** The two ways to cancel (DELETE /:id and POST /:id/cancel): one operation under two paths. */
const cancelRow = (
  method: 'delete' | 'post',
  path: string,
  operationId: string,
  summary: string,
  description: string,
) =>
  endpoint({
    method,
    path,
    operationId,
    tag,
    summary,
    description,
    access: { anyOf: ['migration.jobs.cancel'] },
    budget: 'migration.jobs.cancel',
    params: JobPath,
    answer: {
      status: 202,
      description: 'cancelled or cancelling',
      schema: Job(CANCELLED_EXAMPLE),
    },
    problems: {
      404: 'no such job',
      409: 'job-not-finished: already completed or failed',
      ...QUEUE,
    },
    handle: (ctx, { claims, params }) => cancelJob(ctx, claims.tenantId, params.id),
    audit: {
      action: 'migration.job.cancel',
      target: (_input, view) => view.id,
      details: (_input, view) => ({ state: view.state }),
    },
  });

/** Mounted at /api/v3/migration/jobs (after authentication). */
export const JOB_ENDPOINTS = [
  endpoint({
    method: 'post',
    path: '/',
    operationId: 'submitJob',
    tag,
    summary: 'Submit a conversion, or a batch over a prefix',
    description:
      "The job decrypts as its submitter may: a submitter without crypto.decrypt gets a job of its own whose encrypted inputs fail with 403 forbidden, and failed decryptions count against the submitter's decryption-failure budget. Idempotent: the same tenant, source, source version, metadata and output give the same job; resubmitting a failed or cancelled job runs it again under its id. Transient faults retry with exponential backoff (JOB_ATTEMPTS, JOB_BACKOFF_MS); bad input fails at once with its problem.",
    access: { anyOf: ['migration.jobs.create'] },
    budget: 'migration.jobs.create',
    // The conversion runs in the queue worker: its PWRI derivation and signer checks are bounded
    // there (iteration cap, 128 checks, the worker's signer-check threads), not in this process.
    expensive: { kinds: ['key-derivation', 'signer-chain'], runsIn: 'worker' },
    body: Submit,
    answer: {
      status: 202,
      description: 'accepted; `Location` names the job',
      schema: Job(QUEUED_EXAMPLE),
      headers: { Location: 'the job' },
    },
    problems: {
      404: 'source.key does not exist in your storage',
      422: 'no objects under the prefix, or more than JOB_MAX_BATCH_OBJECTS',
      ...QUEUE,
    },
    extensions: { 'x-keyward-decrypts': true },
    handle: async (ctx, { claims, body, res }) => {
      const view = await submitJob(ctx, claims, body);
      res.location(`${JOBS}/${view.id}`);
      return view;
    },
    audit: {
      action: 'migration.job.submit',
      target: (_input, view) => view.id,
      details: (_input, view) => ({ type: view.type, state: view.state }),
    },
  }),
  endpoint({
    method: 'get',
    path: '/:id',
    operationId: 'getJob',
    tag,
    summary: 'Read a job or batch',
    description:
      "State, progress in bytes and objects, the result object or the problem that failed it. Another tenant's job answers 404.",
    access: { anyOf: ['migration.jobs.read'] },
    budget: 'migration.jobs.read',
    params: JobPath,
    answer: { status: 200, description: 'the job', schema: Job(CONVERT_EXAMPLE) },
    problems: { 404: 'no such job in this tenant', ...QUEUE },
    handle: (ctx, { claims, params }) => readJob(ctx, claims.tenantId, params.id),
  }),
  cancelRow(
    'delete',
    '/:id',
    'deleteJob',
    'Cancel a job or batch (same as POST .../cancel)',
    'See POST .../cancel.',
  ),
  cancelRow(
    'post',
    '/:id/cancel',
    'cancelJob',
    'Cancel a job or batch',
    'A queued job is removed; a running one is stopped by its worker and its partial output discarded (`cancelling` until then). For a batch, every unfinished child is cancelled. Resubmitting runs it again.',
  ),
  endpoint({
    method: 'get',
    path: '/:id/children',
    operationId: 'listJobChildren',
    tag,
    summary: 'List the child jobs of a batch',
    description: 'Each child is a conversion job with its own id, result and problem.',
    access: { anyOf: ['migration.jobs.read'] },
    budget: 'migration.jobs.read',
    params: JobPath,
    query: Type.Object(PAGE_QUERY),
    answer: {
      status: 200,
      description: 'a page',
      schema: Type.Object(
        {
          items: Type.Array(Convert),
          nextCursor: Nullable(Type.String()),
        },
        {
          examples: [
            {
              items: [{ ...CONVERT_EXAMPLE, id: 'cv-8d0a2c4e6f8b1d3f5a7c9e1b3d5f7a9c2e4f6a8b' }],
              nextCursor: null,
            },
          ],
        },
      ),
    },
    problems: { 404: 'no such batch', ...QUEUE },
    handle: (ctx, { claims, params, query }) =>
      jobChildren(ctx, claims.tenantId, params.id, pageRequest(query)),
  }),
  endpoint({
    method: 'delete',
    path: '/:id/result',
    operationId: 'deleteJobResults',
    tag,
    summary: 'Delete the objects a finished conversion (or every child of a batch) wrote',
    description:
      "Removes every object in result.objects (the JOSE result and, for a SignedData, its content) from the tenant's storage, audited as migration.job.results.delete. The job record stays readable; its result download answers 404 afterwards.",
    access: { anyOf: ['migration.jobs.cancel'] },
    budget: 'migration.jobs.cancel',
    params: JobPath,
    answer: {
      status: 200,
      description: 'deleted',
      schema: Type.Object(
        { id: Type.String(), deleted: Type.Array(Type.String()) },
        {
          examples: [
            {
              id: JOB_ID,
              deleted: ['converted/inv-0001.p7m.jws.json', 'converted/inv-0001.p7m.content'],
            },
          ],
        },
      ),
    },
    problems: { 404: 'no such job', 409: 'job-not-finished', ...QUEUE },
    handle: (ctx, { claims, params }) => deleteJobResults(ctx, claims.tenantId, params.id),
    audit: {
      action: 'migration.job.results.delete',
      target: (_input, r) => r.id,
      details: (_input, r) => ({ deleted: r.deleted.length, keys: r.deleted.slice(0, 50) }),
    },
  }),
  endpoint({
    method: 'get',
    path: '/:id/result',
    operationId: 'getJobResult',
    tag,
    summary: 'Download the result of a completed conversion',
    description:
      'Streams the result object with the content type of the conversion (`application/octet-stream` JWS object, or `multipart/mixed` JWE); `?object=content` streams the signed content a SignedData conversion stored beside its JWS.',
    access: { anyOf: ['migration.jobs.result.read'] },
    budget: 'migration.jobs.result.read',
    params: JobPath,
    query: Type.Object({
      object: Type.Optional(
        Type.Union([Type.Literal('result'), Type.Literal('content')], {
          default: 'result',
          description: 'which object the job wrote (result.objects[].role)',
        }),
      ),
    }),
    answer: {
      status: 200,
      description: 'the result (`application/octet-stream` JWS, or `multipart/mixed` JWE)',
      media: 'application/octet-stream',
    },
    problems: {
      404: 'no such job, or the result object was deleted',
      409: 'job-not-finished, or a batch (its children have results)',
      ...QUEUE,
    },
    handle: async (ctx, { claims, params, query, res }) => {
      const result = await openJobResult(ctx, claims.tenantId, params.id, query.object);
      res.status(200).type(result.contentType).setHeader('Content-Length', String(result.size));
      res.setHeader('Content-Disposition', `attachment; filename="${result.filename}"`);
      await pipeline(result.body, res);
    },
  }),
];
