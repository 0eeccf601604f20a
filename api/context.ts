/**
 * Everything a request handler or service may use: the context's type, built once per process
 * by api/open-context.ts and closed in order. Tests build the same context on an in-memory
 * database. Type imports only, so every service may import this file without importing what
 * builds it.
 */
import type { KeyObject } from 'node:crypto';
import type { Config } from '../shared/config/index.ts';
import type { Logger } from '../shared/logger.ts';
import type { KeyPlane } from '../shared/key-plane.ts';
import type { AccessLog } from './http/access-log.ts';
import type { WorkPool } from './threads/pool.ts';
import type { ConversionRunner } from './threads/conversions.ts';
import type { ExpensiveWork } from './threads/expensive.ts';
import type { Metrics } from './metrics.ts';
import type { AuditLog } from '../shared/audit/log.ts';
import type { DecryptionBudget } from '../shared/keys/decryption-budget.ts';
import type { AuthServices } from './services/auth/index.ts';
import type { BackgroundTasks } from './background.ts';
import type { Rewrapper } from '../shared/keys/rewrap.ts';
import type { TransitMounts } from './services/vault-transit/mounts.ts';
import type { ChangeFedCache } from '../shared/fanout/change-fed-cache.ts';
import type { AccessKeyHolder } from './services/auth/access-key-holder.ts';
import type { LazyPart } from '../shared/lazy-part.ts';
import type { JobsProducer } from './services/jobs/producer.ts';
import type { ObjectStore } from '../shared/storage/index.ts';
import type { Queue } from 'bullmq';
import type { MigrateJobData } from '../shared/migrations/index.ts';

/** Automatic key rotation (api/services/keys/rotation-scheduler.ts attaches it). */
export interface RotationScheduler {
  /** One pass: schedules unscheduled keys, rotates those due at `now`; answers how many it rotated. */
  runOnce(now?: Date): Promise<number>;
  /** Stops the timer and waits for a pass under way. */
  close(): Promise<void>;
}

/**
 * The key plane (db, masterKey, masterSecrets, redis, fanout, changes, keys, closers) and the
 * API's parts on top of it.
 */
export interface AppContext extends KeyPlane {
  config: Config;
  logger: Logger;
  /** One line per request (ACCESS_LOG, ACCESS_LOG_SAMPLE), on the logger's destination. */
  accessLog: AccessLog;
  pool: WorkPool;
  /** Where streamed conversions run: the event loop or the conversion threads (CONVERT_THREADS). */
  conversions: ConversionRunner;
  metrics: Metrics;
  audit: AuditLog;
  auth: AuthServices;
  /**
   * Where work whose cost the caller sets runs (key derivation, key-pair generation), and the
   * per-principal budget it spends (docs/expensive-work.md).
   */
  expensive: ExpensiveWork;
  /**
   * The key of encryption-context digests: a sealed master secret, the same on every instance
   * and kept across master-key rotations (api/services/crypto/runtime.ts encryptionContext).
   */
  contextKey: KeyObject;
  /** The decryption-failure budget of every decrypting path. */
  decryption: DecryptionBudget;
  /** Work requests start after answering (reset mails); shutdown waits for it. */
  background: BackgroundTasks;
  /** This instance's master-key rewrap. */
  rewrap: Rewrapper;
  /** Where each tenant's Vault Transit API answers below /v1/, held in memory. */
  transitMounts: TransitMounts;
  /** AWS KMS alias names to kids, by `<tenantId>:<name>` (api/services/aws-kms/aliases.ts). */
  aliases: ChangeFedCache<string>;
  /** Access key ids to their workloads (api/services/auth/access-keys.ts). */
  accessKeys: ChangeFedCache<AccessKeyHolder>;
  /** The conversion job queue's producer, started on first use (queue-unavailable without Redis). */
  jobs: LazyPart<JobsProducer>;
  /** The durable migrations' queue, started on first use (queue-unavailable without Redis). */
  migrateQueue: LazyPart<Queue<MigrateJobData>>;
  /** The deployment's object store (S3 when configured, else DATA_DIR/objects), opened on first use. */
  objectStore: LazyPart<ObjectStore>;
  /** Automatic key rotation; its timer runs when KEY_ROTATION_CHECK_MS > 0. */
  rotation?: RotationScheduler;
}
