/**
 * Tenant scoping: a view of a store where every key lives under `tenants/<tenantId>/`. Keys are
 * validated before the prefix is added (no '..', absolute paths, backslashes, empty segments,
 * NUL, over 1024 bytes), so a tenant can name only its own objects; listed keys come back
 * relative to the tenant prefix. Keys below `.keyward/` are read here but neither written nor
 * deleted: Keyward writes those itself, into the whole store under the tenant prefix.
 */
import type { Readable } from 'node:stream';
import { discardBody } from './body.ts';
import { assertObjectKey, assertPrefix, assertTenantId, assertTenantWritable } from './keys.ts';
import type { ListOptions, ObjectInfo, ObjectStore, PutBody, PutOptions } from './types.ts';

export const TENANTS_PREFIX = 'tenants/';

/** The key prefix of a tenant's objects, e.g. `tenants/acme/`. */
export function tenantPrefix(tenantId: string): string {
  return `${TENANTS_PREFIX}${assertTenantId(tenantId)}/`;
}

export function tenantStore(store: ObjectStore, tenantId: string): ObjectStore {
  const root = tenantPrefix(tenantId);
  const scoped = (key: string): string => root + assertObjectKey(key);
  const writable = (key: string): string =>
    scoped(assertTenantWritable(assertObjectKey(key), 'key'));
  const relative = (info: ObjectInfo, key: string): ObjectInfo => ({ ...info, key });

  return {
    async get(key: string): Promise<Readable> {
      return store.get(scoped(key));
    },
    async head(key: string): Promise<ObjectInfo | null> {
      const info = await store.head(scoped(key));
      return info && relative(info, key);
    },
    async *list(prefix: string, opts: ListOptions = {}): AsyncGenerator<ObjectInfo> {
      const full = root + assertPrefix(prefix);
      const after = opts.startAfter === undefined ? {} : { startAfter: root + opts.startAfter };
      for await (const info of store.list(full, after)) {
        // The backend filters by prefix already; never let anything else through.
        if (!info.key.startsWith(full)) continue;
        yield relative(info, info.key.slice(root.length));
      }
    },
    async put(key: string, body: PutBody, opts?: PutOptions): Promise<ObjectInfo> {
      let full: string;
      try {
        full = writable(key);
      } catch (err) {
        discardBody(body);
        throw err;
      }
      return relative(await store.put(full, body, opts), key);
    },
    async delete(key: string): Promise<void> {
      await store.delete(writable(key));
    },
  };
}
