/**
 * Durable migrations as the API (producer) and the workers (consumers) both see them: the queue
 * and its job names and ids, the payloads, and the rows of `migrations` and `migration_objects`
 * (the ledger). docs/migrations.md describes the whole.
 */

/** The queue of durable migrations: listing steps and chunks. */
export const MIGRATE_QUEUE = 'migrate';
/** A listing step: lists one page of the source and enqueues its chunks. */
export const LIST_JOB = 'list';
/** A chunk: up to MIGRATION_CHUNK_OBJECTS objects converted by one worker. */
export const CHUNK_JOB = 'chunk';

export type MigrationState = 'running' | 'paused' | 'cancelled' | 'completed';

/** The payload of a listing step. */
export interface ListJobData {
  migrationId: string;
  tenantId: string;
  step: number;
}

/** The payload of a chunk: its name; its objects are the ledger rows of that chunk. */
export interface ChunkJobData {
  migrationId: string;
  tenantId: string;
  chunk: string;
}

export type MigrateJobData = ListJobData | ChunkJobData;

/**
 * Job ids are derived from the ledger (BullMQ ignores an add whose id is in the queue), so the
 * sweep can put back exactly what is missing, as often as it likes. BullMQ ids may not hold ':'.
 */
export const listJobId = (migrationId: string, step: number) => `ml-${migrationId}-${step}`;
export const chunkName = (migrationId: string, seq: number) => `mc-${migrationId}-${seq}`;

/** A `migrations` row as the code reads it. */
export interface MigrationRow {
  id: string;
  tenantId: string;
  source: { prefix: string } | { manifest: string };
  metadata: Record<string, unknown>;
  outputPrefix: string;
  decryptPrincipal: string | null;
  state: MigrationState;
  rateLimit: number;
  listingCursor: string | null;
  listingDone: boolean;
  listingStep: number;
  chunksListed: number;
  objectsListed: number;
  objectsConverted: number;
  objectsRefused: number;
  bytesRead: number;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
}

/** An output object as the ledger records it. */
export interface LedgerOutput {
  role: 'result' | 'content';
  key: string;
  size: number;
  sha256: string;
  contentType: string;
  etag?: string;
}

/** A key the conversion used. */
export interface LedgerKey {
  kid: string;
  version: number;
  purpose: string;
}

/** One ledger row (`migration_objects`) as a plain object: what the report and the manifest read. */
export interface LedgerRow {
  migrationId: string;
  sourceKey: string;
  chunk: string;
  inputSize: number | null;
  inputVersion: string | null;
  inputSha256: string | null;
  form: string | null;
  outcome: 'converted' | 'refused' | null;
  problem: string | null;
  detail: string | null;
  outputs: LedgerOutput[];
  keys: LedgerKey[];
  signers: string[];
  attempts: number;
  worker: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  listedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** What a worker found for one object of a chunk. */
export type ObjectOutcome =
  | {
      sourceKey: string;
      outcome: 'converted';
      inputSize: number;
      inputSha256: string;
      form: string;
      outputs: LedgerOutput[];
      keys: LedgerKey[];
      signers: string[];
      startedAt: Date;
    }
  | {
      sourceKey: string;
      outcome: 'refused';
      inputSize: number | null;
      inputSha256: string | null;
      form: string | null;
      problem: string;
      detail: string;
      startedAt: Date;
    };
