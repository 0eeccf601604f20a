/**
 * Object storage for batch inputs and outputs: an S3-compatible bucket when S3 is configured,
 * a local directory (`${dataDir}/objects`) otherwise. Use `tenantStore` to hand a tenant a view
 * confined to its own keys.
 */
import path from 'node:path';
import { FsObjectStore } from './fs-store.ts';
import type { S3ObjectStoreOptions } from './s3-store.ts';
import type { ObjectStore, StorageLogger } from './types.ts';

export type { ObjectInfo, ObjectStore, PutBody, PutOptions, StorageLogger } from './types.ts';
export { FsObjectStore, STAGING_DIR } from './fs-store.ts';
export type { FsObjectStoreOptions } from './fs-store.ts';
// The S3 store (and the minio client, ~11 MB of heap) is imported from './s3-store.ts' by those
// that use it, and loaded here only when S3 is configured.
export type { S3ObjectStoreOptions } from './s3-store.ts';
export { TENANTS_PREFIX, tenantPrefix, tenantStore } from './tenant.ts';
export { MAX_KEY_BYTES, assertObjectKey, assertPrefix, assertTenantId } from './keys.ts';
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
 * Reads the storage settings from the environment: S3 when S3_ENDPOINT is set (with
 * S3_ACCESS_KEY, S3_SECRET_KEY, S3_BUCKET and optional S3_REGION), else DATA_DIR (default ./data).
 */
export function objectStoreConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ObjectStoreConfig {
  const dataDir = env.DATA_DIR || './data';
  if (!env.S3_ENDPOINT) return { dataDir };
  const need = (name: string): string => {
    const value = env[name];
    if (!value) throw new Error(`${name} is required when S3_ENDPOINT is set`);
    return value;
  };
  return {
    dataDir,
    s3: {
      endpoint: env.S3_ENDPOINT,
      accessKey: need('S3_ACCESS_KEY'),
      secretKey: need('S3_SECRET_KEY'),
      bucket: need('S3_BUCKET'),
      region: env.S3_REGION || undefined,
    },
  };
}
