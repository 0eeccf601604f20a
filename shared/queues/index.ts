/**
 * The queued conversion jobs as both sides see them: queue name, payload and
 * result types, deterministic job ids, Redis key names of batch records, and the BullMQ
 * connection options. Producers live in api/services/jobs, the consumer in workers/jobs.
 */
import { createHash } from 'node:crypto';
import type { ConnectionOptions } from 'bullmq';
import type { ObjectInfo } from '../storage/index.ts';
import { CHANNELS } from '../fanout/bus.ts';
import { canonicalJson } from '../canonical-json.ts';

export { queueSettings, type QueueSettings } from './settings.ts';
export { decodeProblem, encodeProblem, problemOf } from './problems.ts';

/** The one queue: PKCS#7/CMS to JOSE conversions, one object each. */
export const CONVERT_QUEUE = 'convert';
/** The BullMQ job name of a conversion. */
export const CONVERT_JOB = 'convert-pkcs7-to-jose';

/** What a conversion job carries. Keys are relative to the tenant's area of the object store. */
export interface ConvertJobData {
  tenantId: string;
  source: { key: string };
  /** The source object's version when submitted (etag, or size and mtime); a changed source fails the job. */
  sourceVersion: string;
  /** The conversion metadata, as the HTTP conversion takes it. */
  metadata: Record<string, unknown>;
  /** Where the result goes, without its extension (added from the result's type). */
  output: { key: string };
  /**
   * Present when the submitter's role held crypto.decrypt: the principal whose decryption-failure
   * budget the job's failures count against. Without it an encrypted input is refused (403), as
   * over HTTP.
   */
  decrypt?: { principal: string };
}

/** Byte counts reported while a conversion runs (job.progress). */
export interface ConvertProgress {
  bytesRead: number;
  bytesWritten: number;
}

/** One object a conversion wrote: the JOSE result, or a SignedData's signed content beside it. */
export interface WrittenObject {
  role: 'result' | 'content';
  key: string;
  size: number;
  contentType: string;
}

/** What a completed conversion returns (job.returnvalue). */
export interface ConvertJobResult {
  /** The JOSE result (the JWS object, or the multipart JWE). */
  key: string;
  size: number;
  contentType: string;
  bytesRead: number;
  /** Every object written, the result first; absent in results of older workers. */
  objects?: WrittenObject[];
}

/** The key of a SignedData's signed content, written beside its `.jws.json` (nothing is lost). */
export const CONTENT_EXTENSION = '.content';

/** A batch: one conversion job per object under a prefix, listed in a Redis record. */
export interface BatchRecord {
  id: string;
  tenantId: string;
  source: { bucket?: string; prefix: string };
  output: { prefix: string };
  metadata: Record<string, unknown>;
  objectsTotal: number;
  createdAt: string;
  /** Set once every child job was added; a record without it is completed by a resubmission. */
  submitted: boolean;
  cancelledAt?: string;
}

/** Redis key names next to the queue's own keys (same prefix, so one Redis can host several deployments). */
export const redisKeys = {
  batch: (prefix: string, id: string) => `${prefix}:jobs:batch:${id}`,
  batchChildren: (prefix: string, id: string) => `${prefix}:jobs:batch:${id}:children`,
  cancelled: (prefix: string, id: string) => `${prefix}:jobs:cancelled:${id}`,
  /** The bus channel of cancel requests (shared/fanout/bus.ts names every channel). */
  cancelChannel: CHANNELS.jobCancel,
};

const digest = (parts: string[]): string =>
  createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 40);

/**
 * The job id of a conversion: the same tenant, source object and version, metadata and output
 * give the same id, so BullMQ ignores a resubmission (idempotency).
 */
export function convertJobId(
  data: Omit<ConvertJobData, 'source' | 'output'> & {
    source: { key: string };
    output: { key: string };
  },
): string {
  // The job decrypts as its submitter may, against the submitter's budget: each principal gets a
  // job of its own, so nobody runs (or spends the budget of) another's.
  const may = data.decrypt ? ['decrypt', data.decrypt.principal] : ['no-decrypt'];
  return `cv-${digest(['convert/v1', data.tenantId, data.source.key, data.sourceVersion, canonicalJson(data.metadata), data.output.key, ...may])}`;
}

/** The id of a batch: its tenant, source, output and metadata, and the ids of its children. */
export function batchJobId(
  tenantId: string,
  source: BatchRecord['source'],
  output: BatchRecord['output'],
  metadata: Record<string, unknown>,
  childIds: string[],
): string {
  const children = createHash('sha256');
  for (const id of childIds) children.update(id).update('\n');
  return `bt-${digest(['batch/v1', tenantId, source.bucket ?? '', source.prefix, output.prefix, canonicalJson(metadata), children.digest('hex')])}`;
}

/** The version string of an object: S3 etag when there is one, else size and modification time. */
export function sourceVersionOf(info: ObjectInfo): string {
  if (info.etag) return `etag:${info.etag.replace(/^"|"$/g, '')}`;
  return `size:${info.size};mtime:${info.lastModified?.getTime() ?? 0}`;
}

/** The extension of a result, from the conversion's content type. */
export function resultExtension(contentType: string): string {
  return contentType.startsWith('multipart/') ? '.jwe' : '.jws.json';
}

/** True for an id the jobs API can have issued. */
export function isJobId(id: string): boolean {
  return /^(cv|bt)-[0-9a-f]{40}$/.test(id);
}

/**
 * BullMQ connection options for a Redis URL. `blocking` connections (workers) must retry
 * forever (BullMQ requires maxRetriesPerRequest null); producer connections fail fast so an API
 * request answers 503 instead of hanging while Redis is away.
 */
export function connectionOptions(url: string, blocking: boolean): ConnectionOptions {
  return blocking
    ? { url, maxRetriesPerRequest: null, enableReadyCheck: true }
    : { url, maxRetriesPerRequest: 1, connectTimeout: 5000, enableOfflineQueue: true };
}
