/**
 * Durable migrations, /api/v3/migration/migrations (docs/migrations.md): create one over a prefix
 * of any size or a manifest of keys, read its state, counts, rate and ETA, pause, resume, cancel,
 * retry its refused objects, and stream its report from the ledger. The tenant always comes from
 * the token; another tenant's migration answers 404, exactly like a missing one. The permissions
 * are those of the jobs API, so a role that runs batches runs migrations.
 *
 * Tests: test/integration/durable-migration/migration.test.ts,
 *   test/integration/durable-migration/cli.test.ts,
 *   test/integration/durable-migration/chaos.test.ts
 */
import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import Type from 'typebox';
import { endpoint } from '../../../rows/endpoint.ts';
import { Body } from '../../../schemas/common.ts';
import {
  createMigration,
  moveMigration,
  readMigration,
  reportedMigration,
  retryRefused,
} from '../../../services/migration/migrations.ts';
import { reportLines } from '../../../services/migration/ledger.ts';
import { migrationManifest, migrationProof } from '../../../services/migration/manifest.ts';
import {
  OUTPUTS_PAGE_MAX,
  deleteMigrationObjects,
  migrationOutputsBody,
  openMigrationOutput,
} from '../../../services/migration/outputs.ts';
import { sendStreamed } from '../../../http/streaming.ts';
import {
  MIGRATION_ID,
  Count,
  State,
  Source,
  EXAMPLE,
  Migration,
} from '../../../schemas/migrations.ts';

const MIGRATIONS = '/api/v3/migration/migrations';
const tag = 'migrations';
const Create = Body(
  {
    source: Source,
    metadata: Type.Optional(
      Type.Object(
        {},
        {
          description:
            'conversion metadata, as a batch takes it (signerKid, recipientKid, targetKid, contentEncryption, keyManagement, b64, verify); password is refused',
        },
      ),
    ),
    output: Type.Object(
      {
        prefix: Type.String({
          description: "where results go; the paths below the source prefix's folder are kept",
        }),
      },
      { additionalProperties: false },
    ),
    rateLimit: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        description: 'objects per second; default 0, no limit of its own',
      }),
    ),
  },
  {
    source: { prefix: 'archive/' },
    metadata: { targetKid: 'archive-2026' },
    output: { prefix: 'converted/' },
    rateLimit: 200,
  },
);
const MigrationPath = Type.Object({
  id: Type.String({ description: 'the migration id (a UUID)', examples: [MIGRATION_ID] }),
});
const QUEUE = { 503: 'queue-unavailable: REDIS_URL is not set' };

/** A row removing one kind of a migration's objects through its ledger (services/migration/outputs.ts). */
function removal(
  which: 'outputs' | 'inputs',
  doc: { operationId: string; summary: string; description: string; permission: string },
) {
  return endpoint({
    method: 'delete',
    path: `/:id/${which}`,
    operationId: doc.operationId,
    tag,
    summary: doc.summary,
    description: doc.description,
    access: { anyOf: [doc.permission] },
    budget: doc.permission,
    params: MigrationPath,
    answer: {
      status: 200,
      description: 'what was removed, and what was kept as changed since the migration read it',
      schema: Type.Object(
        { id: Type.String(), deleted: Count, kept: Count },
        { examples: [{ id: MIGRATION_ID, deleted: 2400, kept: 0 }] },
      ),
    },
    problems: {
      404: 'no such migration in this tenant',
      409: 'invalid-transition: the migration is still running or paused',
      503: 'storage-unavailable: object storage is unreachable',
    },
    handle: (ctx, { claims, params }) =>
      deleteMigrationObjects(ctx, claims.tenantId, params.id, which),
    audit: {
      action: `migration.migration.${which}.delete`,
      target: (_input, view) => view.id,
      details: (_input, view) => ({ deleted: view.deleted, kept: view.kept }),
    },
  });
}

/** pause, resume and cancel: one row each, one service. */
const moveRow = (op: 'pause' | 'resume' | 'cancel', summary: string, description: string) =>
  endpoint({
    method: 'post',
    path: `/:id/${op}`,
    operationId: `${op}Migration`,
    tag,
    summary,
    description,
    access: { anyOf: ['migration.jobs.cancel'] },
    budget: 'migration.jobs.cancel',
    params: MigrationPath,
    answer: { status: 200, description: 'the migration after the change', schema: Migration },
    problems: {
      404: 'no such migration',
      409: `invalid-transition: the migration's state does not allow ${op}`,
      ...QUEUE,
    },
    handle: (ctx, { claims, params }) => moveMigration(ctx, claims.tenantId, params.id, op),
    audit: {
      action: `migration.migration.${op}`,
      target: (_input, view) => view.id,
      details: (_input, view) => ({ state: view.state }),
    },
  });

/** Mounted at /api/v3/migration/migrations (after authentication). */
export const MIGRATION_ENDPOINTS = [
  endpoint({
    method: 'post',
    path: '/',
    operationId: 'createMigration',
    tag,
    summary: 'Create a durable migration over a prefix or a manifest of keys',
    description:
      "The source is listed page by page while workers convert it in chunks; every object gets a ledger row (GET .../report). The conversions decrypt as the creator may, against the creator's decryption-failure budget. Any number of workers on any number of machines work on it; it resumes by itself after a crash.",
    access: { anyOf: ['migration.jobs.create'] },
    budget: 'migration.jobs.create',
    body: Create,
    answer: {
      status: 202,
      description: 'created and started; `Location` names it',
      schema: Migration,
      headers: { Location: 'the migration' },
    },
    problems: QUEUE,
    handle: async (ctx, { claims, body, res }) => {
      const view = await createMigration(ctx, claims, body);
      res.location(`${MIGRATIONS}/${view.id}`);
      return view;
    },
    audit: {
      action: 'migration.migration.create',
      target: (_input, view) => view.id,
      details: (_input, view) => ({ source: view.source, output: view.output }),
    },
  }),
  endpoint({
    method: 'get',
    path: '/:id',
    operationId: 'getMigration',
    tag,
    summary: 'Read a migration: state, counts, rate and ETA',
    access: { anyOf: ['migration.jobs.read'] },
    budget: 'migration.jobs.read',
    params: MigrationPath,
    answer: { status: 200, description: 'the migration', schema: Migration },
    problems: { 404: 'no such migration in this tenant' },
    handle: (ctx, { claims, params }) => readMigration(ctx, claims.tenantId, params.id),
  }),
  moveRow(
    'pause',
    'Pause a migration',
    'Workers take no new chunk of it; chunks under way finish. Resume continues where it stopped.',
  ),
  moveRow(
    'resume',
    'Resume a paused migration (or put a running one back in flight)',
    'Queues the listing and every unfinished chunk that is not queued: after a crash or a Redis loss this is the one command that resumes at once, without waiting for the sweep.',
  ),
  moveRow(
    'cancel',
    'Cancel a migration',
    'For good: no new chunk starts; the ledger and the outputs written so far stay.',
  ),
  endpoint({
    method: 'post',
    path: '/:id/retry',
    operationId: 'retryMigration',
    tag,
    summary: 'Convert the refused objects again',
    description:
      'Only the refused objects become pending again (after importing a missing key, say); converted objects are not touched. A completed migration runs again until they are final.',
    access: { anyOf: ['migration.jobs.cancel'] },
    budget: 'migration.jobs.cancel',
    params: MigrationPath,
    answer: {
      status: 202,
      description: 'the refused objects are pending again',
      schema: Type.Intersect([Migration, Type.Object({ retried: Count })], {
        examples: [{ ...EXAMPLE, retried: 12 }],
      }),
    },
    problems: {
      404: 'no such migration',
      409: 'invalid-transition: the migration was cancelled',
      503: `${QUEUE[503]}; storage-unavailable: a completed migration's stored manifest could not be removed`,
    },
    handle: (ctx, { claims, params }) => retryRefused(ctx, claims.tenantId, params.id),
    audit: {
      action: 'migration.migration.retry',
      target: (_input, view) => view.id,
      details: (_input, view) => ({ retried: view.retried }),
    },
  }),
  endpoint({
    method: 'get',
    path: '/:id/report',
    operationId: 'getMigrationReport',
    tag,
    summary: 'Every object of the migration, from the ledger: JSON Lines, or CSV',
    description:
      'One line per source object in source-key order: outcome (converted, refused, pending), problem and detail, input size and SHA-256, the form found, the outputs with their sizes and SHA-256, the keys used, the original signers (certificate SHA-256), attempts, worker and times. Streamed page by page, whatever the size.',
    access: { anyOf: ['migration.jobs.result.read'] },
    budget: 'migration.jobs.result.read',
    params: MigrationPath,
    query: Type.Object({
      format: Type.Optional(
        Type.Union([Type.Literal('jsonl'), Type.Literal('csv')], { default: 'jsonl' }),
      ),
    }),
    answer: {
      status: 200,
      description: 'the report',
      content: {
        'application/jsonl': {
          example:
            '{"sourceKey":"archive/a.p7m","outcome":"converted","problem":null,"detail":null,"inputSize":2048,"inputSha256":"…","form":"envelopedData","outputs":[{"role":"result","key":"converted/a.p7m.jwe","size":2731,"sha256":"…","contentType":"multipart/mixed; boundary=…"}],"keys":[{"kid":"archive-2026","version":1,"purpose":"encrypt"}],"signers":[],"attempts":1,"worker":"host:123:ab12cd","startedAt":"…","finishedAt":"…"}\n',
        },
        'text/csv': {
          example:
            'sourceKey,outcome,problem,detail,inputSize,inputSha256,form,outputs,keys,signers,attempts,worker,startedAt,finishedAt\r\n',
        },
      },
    },
    problems: { 404: 'no such migration in this tenant' },
    handle: async (ctx, { claims, params, query, res }) => {
      const m = await reportedMigration(ctx, claims.tenantId, params.id);
      const format = query.format ?? 'jsonl';
      res.status(200).type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/jsonl');
      res.setHeader('Content-Disposition', `attachment; filename="migration-${m.id}.${format}"`);
      for await (const text of reportLines(ctx.db, m.id, format)) {
        if (!res.write(text))
          await new Promise<void>((resolve, reject) => {
            res.once('drain', resolve);
            res.once('close', () => reject(new Error('the client went away')));
          });
      }
      res.end();
    },
  }),
  endpoint({
    method: 'get',
    path: '/:id/output',
    operationId: 'getMigrationOutput',
    tag,
    summary: 'Download what one source object became',
    description:
      "Streams the output the ledger records for a converted source object: the JOSE result, or with `role=content` the signed content a SignedData's JWS sits beside. A client that migrated a folder reads its results back this way, by the keys it uploaded.",
    access: { anyOf: ['migration.jobs.result.read'] },
    budget: 'migration.jobs.result.read',
    params: MigrationPath,
    query: Type.Object({
      object: Type.String({ minLength: 1, maxLength: 1024, description: 'the source key' }),
      role: Type.Optional(
        Type.Union([Type.Literal('result'), Type.Literal('content')], {
          default: 'result',
          description: 'which output (outputs[].role in the report)',
        }),
      ),
    }),
    answer: {
      status: 200,
      description: 'the output (`application/octet-stream` JWS, or `multipart/mixed` JWE)',
      media: 'application/octet-stream',
    },
    problems: {
      404: 'no such migration in this tenant, no converted row of that object, or its output is gone',
    },
    handle: async (ctx, { claims, params, query, res }) => {
      const out = await openMigrationOutput(
        ctx,
        claims.tenantId,
        params.id,
        query.object,
        query.role ?? 'result',
      );
      res.status(200).type(out.contentType).setHeader('Content-Length', String(out.size));
      res.setHeader('Content-Disposition', `attachment; filename="${out.filename}"`);
      await pipeline(out.body, res);
    },
  }),
  endpoint({
    method: 'get',
    path: '/:id/outputs',
    operationId: 'getMigrationOutputs',
    tag,
    summary: 'Download the outputs of many converted objects in one answer',
    description: `Streams, as one multipart/mixed body, the outputs of up to \`limit\` converted source objects after \`after\`, in source-key order: a part per output (a SignedData's content before its result), each with Content-Type, Content-Length and the headers Keyward-Source-Key (percent-encoded), Keyward-Role (result or content) and Keyward-Sha256, as the report gives them. A client that migrated a folder of small files reads its results this way in a request per ${OUTPUTS_PAGE_MAX.toLocaleString('en')} objects at most, and asks again after the last source key it got while a page comes back full. An output gone from storage is left out (GET .../output answers its 404); one whose length differs from the ledger cuts the answer.`,
    access: { anyOf: ['migration.jobs.result.read'] },
    budget: 'migration.jobs.result.read',
    params: MigrationPath,
    query: Type.Object({
      after: Type.Optional(
        Type.String({ minLength: 1, maxLength: 1024, description: 'start past this source key' }),
      ),
      limit: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: OUTPUTS_PAGE_MAX,
          default: 1000,
          description: 'most converted objects in the answer',
        }),
      ),
    }),
    answer: {
      status: 200,
      description: 'the outputs, one part each',
      media: 'multipart/mixed',
    },
    problems: { 404: 'no such migration in this tenant' },
    handle: async (ctx, { claims, params, query, res }) => {
      const boundary = randomBytes(16).toString('hex');
      const body = await migrationOutputsBody(
        ctx,
        claims.tenantId,
        params.id,
        { after: query.after ?? null, limit: query.limit ?? 1000 },
        boundary,
      );
      await sendStreamed(res, `multipart/mixed; boundary="${boundary}"`, body, { bytesOut: 0 });
    },
  }),
  removal('outputs', {
    operationId: 'deleteMigrationOutputs',
    summary: 'Remove every object the migration wrote',
    description:
      "Deletes each output the ledger records (results and SignedData contents) from the tenant's storage, once the migration completed or was cancelled. The ledger, the report and the manifest stay; a second call finds nothing left to delete.",
    permission: 'migration.jobs.cancel',
  }),
  removal('inputs', {
    operationId: 'deleteMigrationInputs',
    summary: 'Remove the source objects the migration converted',
    description:
      'Deletes each source object the ledger records as converted, once the migration completed or was cancelled, if it is still the version the migration read: one replaced since is kept (counted in `kept`), and a refused or pending object is never touched. The ledger, the report and the manifest stay. A client that uploaded a folder to migrate removes its uploads this way in one call.',
    permission: 'migration.uploads.write',
  }),
  endpoint({
    method: 'get',
    path: '/:id/manifest',
    operationId: 'getMigrationManifest',
    tag,
    summary: "The migration's signed manifest: the ledger's tree head, signed by the archive key",
    description:
      "The rows with an outcome, in source-key order and canonical JSON, are the leaves of an RFC 6962 tree (docs/manifest.md); its size and root, the migration's parameters and counts are the payload of a compact JWS (typ keyward-migration-manifest+jwt) by the tenant's archive signing key. Asked before the migration completes, it is a checkpoint of what is final so far. `keyward verify-manifest` checks an output tree against it offline.",
    access: { anyOf: ['migration.jobs.result.read'] },
    budget: 'migration.jobs.result.read',
    params: MigrationPath,
    answer: {
      status: 200,
      description: 'the manifest',
      schema: Type.Object(
        {
          jws: Type.String({ description: 'the compact JWS' }),
          root: Type.String({ pattern: '^[0-9a-f]{64}$' }),
          size: Count,
          state: State,
        },
        {
          examples: [
            { jws: 'eyJhbGciOiJSUzI1NiIs…', root: 'a3f1…', size: 120000, state: 'completed' },
          ],
        },
      ),
    },
    problems: {
      404: 'no such migration in this tenant',
      422: 'the tenant has no archive signing key to sign the manifest with',
    },
    handle: (ctx, { claims, params }) => migrationManifest(ctx, claims.tenantId, params.id),
  }),
  endpoint({
    method: 'get',
    path: '/:id/proof',
    operationId: 'getMigrationProof',
    tag,
    summary: "One object's inclusion proof in the manifest's tree",
    description:
      "The audit path (RFC 6962 section 2.1.1) of the object's ledger row: with its leaf (the row's canonical JSON) it recomputes the root the manifest signs.",
    access: { anyOf: ['migration.jobs.result.read'] },
    budget: 'migration.jobs.result.read',
    params: MigrationPath,
    query: Type.Object({ object: Type.String({ minLength: 1, maxLength: 1024 }) }),
    answer: {
      status: 200,
      description: 'the proof',
      schema: Type.Object(
        {
          index: Count,
          path: Type.Array(Type.String({ pattern: '^[0-9a-f]{64}$' })),
          size: Count,
          root: Type.String({ pattern: '^[0-9a-f]{64}$' }),
        },
        { examples: [{ index: 41, path: ['9c1d…', '07ab…'], size: 120000, root: 'a3f1…' }] },
      ),
    },
    problems: { 404: 'no such migration in this tenant, or no final row of that object' },
    handle: (ctx, { claims, params, query }) =>
      migrationProof(ctx, claims.tenantId, params.id, query.object),
  }),
];
