/**
 * Object storage for batch inputs and outputs: an S3-compatible bucket when S3 is configured,
 * a local directory (`${dataDir}/objects`) otherwise. Use `tenantStore` to hand a tenant a view
 * confined to its own keys.
 */
import path from 'node:path';
import { FsObjectStore } from './fs-store.ts';
import type { S3ObjectStoreOptions } from './s3-store.ts';
import type { ObjectStore, StorageLogger } from './types.ts';
import type { Config } from '../config/index.ts';

export type {
  ListOptions,
  ObjectInfo,
  ObjectStore,
  PutBody,
  PutOptions,
  StorageLogger,
} from './types.ts';
export { FsObjectStore, STAGING_DIR } from './fs-store.ts';
export type { FsObjectStoreOptions } from './fs-store.ts';
// The S3 store (and the minio client, ~11 MB of heap) is imported from './s3-store.ts' by those
// that use it, and loaded here only when S3 is configured.
export type { S3ObjectStoreOptions } from './s3-store.ts';
export { TENANTS_PREFIX, tenantPrefix, tenantStore } from './tenant.ts';
export {
  MAX_KEY_BYTES,
  RESERVED_SEGMENT,
  assertObjectKey,
  assertPrefix,
  assertTenantId,
  assertTenantWritable,
} from './keys.ts';
export { isTransientStorageError, storageUnavailable } from './errors.ts';

export interface ObjectStoreConfig {
  dataDir: string;
  /** When present, objects live in this bucket (created if missing); otherwise on disk. */
  s3?: S3ObjectStoreOptions;
  logger?: StorageLogger;
}

/** Builds the configured store and checks it is usable (directory created, bucket present). */
export async function createObjectStore(config: ObjectStoreConfig): Promise<ObjectStore> {
  if (config.s3) {
    const { S3ObjectStore } = await import('./s3-store.ts');
    const store = new S3ObjectStore({ logger: config.logger, ...config.s3 });
    await store.ensureBucket();
    return store;
  }
  const store = new FsObjectStore({ root: path.join(config.dataDir, 'objects') });
  await store.init();
  return store;
}

/**
 * The storage settings of a validated configuration: S3 when S3_ENDPOINT is set (its credentials
 * are then required by the schema's s3-credentials check), else DATA_DIR/objects.
 */
export function objectStoreConfig(
  config: Pick<
    Config,
    'dataDir' | 's3Endpoint' | 's3AccessKey' | 's3SecretKey' | 's3Bucket' | 's3Region'
  >,
  logger?: StorageLogger,
): ObjectStoreConfig {
  const s3 = config.s3Endpoint
    ? {
        endpoint: config.s3Endpoint,
        accessKey: config.s3AccessKey ?? '',
        secretKey: config.s3SecretKey ?? '',
        bucket: config.s3Bucket,
        region: config.s3Region,
      }
    : undefined;
  return { dataDir: config.dataDir, ...(s3 ? { s3 } : {}), ...(logger ? { logger } : {}) };
}
